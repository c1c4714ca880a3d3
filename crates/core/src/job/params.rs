//! One table of Job parameters. Every front end that sets a Job field from a string — `run`'s
//! flags, sweep axes and suite settings, vxbench options — goes through [`PARAMS`]: each entry
//! names the parameter (canonical name, aliases, header label), says which front ends accept
//! it and how each spells it (flag, axis, TOML key, vx option), and holds the one setter that
//! parses the string and stores it. Each kind of value has one parser here (one access-pattern
//! parser, one boolean parser, one worker-mode parser), so a value means the same thing
//! whichever way it was given. TOML job files are read by serde into the same fields; the
//! `toml` column names the key, and a test checks that both ways agree.

use super::{
    Access, Advice, BsDirs, BsRange, BsSplit, BufferPattern, CachePolicy, DedupeMode, Distribution,
    EngineKind, Job, PerDirection, RateMeasure, RateProcess, RateScope, Think, WorkerMode,
    MAX_THREADS,
};
use crate::error::UsageError;
use crate::units::{parse_duration, parse_size_as, BareUnit};
use crate::usage;

/// What kind of value a parameter takes (decides how a bare number is read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An access pattern (`read`, `rand_read`, `mmapwrite`, ...).
    Access,
    /// A size in bytes; a bare number is bytes, except in vx where it is KB (vxbench's rule).
    Size,
    /// A size in bytes everywhere, vx included (`--rate-bytes`).
    Bytes,
    /// A count (`k` = 1024).
    Count,
    /// A count within a range (threads, queue depth, repeats, percentages).
    Ranged { min: u64, max: u64 },
    /// A duration (`10s`, `2m`).
    Duration,
    /// On or off (`1/0`, `true/false`, `yes/no`, `on/off`).
    Bool,
    /// A cache policy; its discovered threshold is a [`Kind::Size`].
    Cache,
    /// One word from a fixed list (engine, workers, rate scope).
    Choice,
    /// A comma list of words (advice, space flags).
    List,
    /// Free text (the job name).
    Text,
}

/// Which front end is setting a value, and so how the parameter is named in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front<'a> {
    /// `fsbench run`'s flag (`--bs`).
    Flag,
    /// A sweep axis or suite setting (`bs=64k`): messages use the parameter's noun.
    Axis,
    /// vxbench's command line; the spelling the user gave (`iosize`, `-e`, `--qd`).
    Vx(&'a str),
    /// An fio job option, named as the user wrote it (`bs in [job1]`); values arrive in
    /// bytes, counts and seconds, already read with fio's own unit rules.
    Fio(&'a str),
}

/// How a setter reads its value: the name to put in a message and what a bare number means.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub what: &'a str,
    pub bare: BareUnit,
}

/// One Job parameter and every way to set it.
pub struct Param {
    /// Canonical name: the axis name when it is an axis, and the name in stored settings.
    pub name: &'static str,
    /// Other names accepted as axis or setting names.
    pub aliases: &'static [&'static str],
    /// Column header in tables.
    pub label: &'static str,
    /// What the value is, in messages from sweeps and suites ("block size").
    pub noun: &'static str,
    /// `run`'s flag, if `run` takes it.
    pub flag: Option<&'static str>,
    /// Whether sweeps and suites accept it as an axis or setting.
    pub axis: bool,
    /// The key in a TOML job file (dotted for nested tables). Job files are read by serde
    /// into the same fields; the table's tests check that this key sets this parameter.
    #[cfg_attr(not(test), allow(dead_code))]
    pub toml: &'static str,
    /// vxbench's spellings (`iosize` for `-i iosize=`, `-e`, `--qd`); empty when vx lacks it.
    pub vx: &'static [&'static str],
    pub kind: Kind,
    set: fn(&mut Job, &str, &Ctx) -> Result<(), UsageError>,
    /// The field's value as a string the setter accepts (for records and round trips).
    #[cfg_attr(not(test), allow(dead_code))]
    pub show: fn(&Job) -> String,
}

impl std::fmt::Debug for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Param {
    /// Parse `value` and store it in `job`, naming the parameter the way `front` spells it.
    pub fn set(&self, job: &mut Job, value: &str, front: Front) -> Result<(), UsageError> {
        let what = match front {
            Front::Flag => self.flag.unwrap_or(self.noun),
            Front::Axis => self.noun,
            Front::Vx(s) | Front::Fio(s) => s,
        };
        let bare = match (self.kind, front) {
            (Kind::Size | Kind::Cache, Front::Vx(_)) => BareUnit::Kilobytes,
            (Kind::Size | Kind::Cache | Kind::Bytes, _) => BareUnit::Bytes,
            _ => BareUnit::Count,
        };
        (self.set)(job, value.trim(), &Ctx { what, bare })
    }
}

// ---- one parser per kind of value ----

/// The one access-pattern parser: fio-style (`randread`), vxbench-style (`rand_read`,
/// `rand_mixed`, `seq_read`) and the mmap patterns, which also choose the mmap engine.
pub(crate) fn parse_access(
    v: &str,
    what: &str,
) -> Result<(Access, Option<EngineKind>), UsageError> {
    Ok(match v {
        "read" | "seq_read" => (Access::Read, None),
        "write" | "seq_write" => (Access::Write, None),
        "rw" | "readwrite" => (Access::ReadWrite, None),
        "randread" | "rand_read" => (Access::RandRead, None),
        "randwrite" | "rand_write" => (Access::RandWrite, None),
        "randrw" | "rand_mixed" => (Access::RandRw, None),
        "mmapread" | "mmap_read" => (Access::Read, Some(EngineKind::Mmap)),
        "mmapwrite" | "mmap_write" => (Access::Write, Some(EngineKind::Mmap)),
        "trim" => (Access::Trim, None),
        "randtrim" | "rand_trim" => (Access::RandTrim, None),
        "trimwrite" => (Access::TrimWrite, None),
        _ => {
            return Err(usage!(
                "unknown {what} '{v}': expected read, write, rw, randread (rand_read), randwrite (rand_write), randrw (rand_mixed), mmapread (mmap_read), mmapwrite (mmap_write), trim, randtrim or trimwrite"
            ))
        }
    })
}

/// The one boolean parser.
pub(crate) fn parse_bool(v: &str, what: &str) -> Result<bool, UsageError> {
    match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(usage!(
            "bad {what} value '{v}': expected 1/0, true/false, yes/no"
        )),
    }
}

/// A count between `min` and `max`.
pub(crate) fn parse_ranged(v: &str, what: &str, min: u64, max: u64) -> Result<u64, UsageError> {
    let n = parse_size_as(v, BareUnit::Count, what)?;
    if n < min || n > max {
        return Err(usage!("bad {what} '{v}': must be {min} to {max}"));
    }
    Ok(n)
}

/// Most access advice values one job takes (advice adds up over --advise and each vx -c;
/// each is a posix_fadvise per file).
const MAX_ADVICE: usize = 16;

fn size(v: &str, c: &Ctx) -> Result<u64, UsageError> {
    parse_size_as(v, c.bare, c.what)
}

/// A CPU list as fio's cpus_allowed and the kernel write it (`0-1,3`), of online CPUs only.
fn cpu_list(v: &str, what: &str) -> Result<Vec<usize>, UsageError> {
    let cpus = crate::probe::host::parse_cpu_list(v)
        .ok_or_else(|| usage!("{what} {v:?}: expected CPU numbers and ranges such as 0-1,3"))?;
    if let Some(online) = crate::probe::host::online_cpus() {
        if let Some(off) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(usage!(
                "{what} {v:?}: CPU {off} is not online (online: {})",
                crate::probe::host::cpu_list(&online)
            ));
        }
    }
    Ok(cpus)
}

fn secs(v: &str) -> Result<f64, UsageError> {
    Ok(parse_duration(v)?.as_secs_f64())
}

/// A minimum that must be above zero (a minimum of 0 judges nothing).
fn positive(n: u64, c: &Ctx) -> Result<u64, UsageError> {
    if n == 0 {
        return Err(usage!("bad {} 0: must be above zero", c.what));
    }
    Ok(n)
}

/// The longest minimum-rate cycle (an hour).
const MAX_RATE_CYCLE_MS: u64 = 3_600_000;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn onoff(b: bool) -> String {
    if b { "true" } else { "false" }.into()
}

// ---- the table ----

macro_rules! flag_bool {
    ($name:literal, $flag:expr, $axis:literal, $toml:literal, $vx:expr, $label:literal, $($field:ident).+) => {
        Param {
            name: $name,
            aliases: &[],
            label: $label,
            noun: $name,
            flag: $flag,
            axis: $axis,
            toml: $toml,
            vx: $vx,
            kind: Kind::Bool,
            set: |j, v, c| {
                j.$($field).+ = parse_bool(v, c.what)?;
                Ok(())
            },
            show: |j| onoff(j.$($field).+),
        }
    };
}

/// Every Job parameter a front end sets from a string. Axis parameters come first, in the
/// order `fsbench sweep` lists them.
pub static PARAMS: &[Param] = &[
    Param {
        name: "rw",
        aliases: &["access"],
        label: "access",
        noun: "access",
        flag: Some("--rw"),
        axis: true,
        toml: "access",
        vx: &["workload"],
        kind: Kind::Access,
        set: |j, v, c| {
            let (a, e) = parse_access(v, c.what)?;
            j.access = a;
            if let Some(e) = e {
                j.engine = e;
            }
            Ok(())
        },
        show: |j| j.access.name().into(),
    },
    Param {
        name: "bs",
        aliases: &["iosize", "block_size"],
        label: "block size",
        noun: "block size",
        flag: Some("--bs"),
        axis: true,
        toml: "block_size",
        vx: &["iosize"],
        kind: Kind::Size,
        // `READS,WRITES[,TRIMS]` gives each direction its size (fio's `bs=4k,64k`); an axis
        // splits its values at commas first, so it only sees one size.
        set: |j, v, c| {
            if v.contains(',') {
                // vxbench has no per-direction sizes (and reads a bare size as KB).
                if c.bare != BareUnit::Bytes {
                    return Err(usage!(
                        "bad {} '{v}': one size (reads and writes take the same)",
                        c.what
                    ));
                }
                let b = BsDirs::parse(v, c.what)?;
                if b.dirs == [b.dirs[0]; 3] {
                    j.block_size = b.dirs[0];
                    j.block_sizes = None;
                } else {
                    j.block_sizes = Some(b);
                }
            } else {
                j.block_size = size(v, c)?;
                j.block_sizes = None;
            }
            Ok(())
        },
        show: |j| match &j.block_sizes {
            Some(b) => b.spec(),
            None => j.block_size.to_string(),
        },
    },
    // The per-direction `--bs` in a TOML job file (`block_size` holds one number there).
    Param {
        name: "block_sizes",
        aliases: &[],
        label: "block sizes",
        noun: "block sizes",
        flag: None,
        axis: false,
        toml: "block_sizes",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.block_sizes = Some(BsDirs::parse(v, c.what)?);
            Ok(())
        },
        show: |j| opt(j.block_sizes.map(|b| b.spec())),
    },
    Param {
        name: "bsrange",
        aliases: &["blocksize_range"],
        label: "size range",
        noun: "size range",
        flag: Some("--bsrange"),
        axis: true,
        toml: "bsrange",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.bsrange = Some(BsRange::parse(v, c.what)?);
            Ok(())
        },
        show: |j| opt(j.bsrange.map(|r| r.spec())),
    },
    Param {
        name: "block_align",
        aliases: &["blockalign", "ba"],
        label: "block align",
        noun: "offset alignment",
        flag: Some("--block-align"),
        axis: true,
        toml: "block_align",
        vx: &[],
        kind: Kind::Size,
        set: |j, v, c| {
            j.block_align = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.block_align),
    },
    Param {
        name: "skip",
        aliases: &[],
        label: "skip",
        noun: "skip after each I/O",
        flag: Some("--skip"),
        axis: true,
        toml: "skip",
        vx: &[],
        kind: Kind::Size,
        set: |j, v, c| {
            j.skip = Some(size(v, c)?).filter(|&s| s > 0);
            Ok(())
        },
        show: |j| opt(j.skip),
    },
    Param {
        name: "random_run",
        aliases: &[],
        label: "random run",
        noun: "I/Os per random offset",
        flag: Some("--random-run"),
        axis: true,
        toml: "random_run",
        vx: &[],
        kind: Kind::Count,
        set: |j, v, c| {
            j.random_run = Some(size(v, c)?).filter(|&n| n > 1);
            Ok(())
        },
        show: |j| opt(j.random_run),
    },
    Param {
        name: "size",
        aliases: &["file_size", "filesize"],
        label: "file size",
        noun: "file size",
        flag: Some("--size"),
        axis: true,
        toml: "file_size",
        vx: &["maxfilesize"],
        kind: Kind::Size,
        set: |j, v, c| {
            j.file_size = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.file_size),
    },
    Param {
        name: "cache",
        aliases: &["policy"],
        label: "cache",
        noun: "cache",
        flag: Some("--cache"),
        axis: true,
        toml: "cache",
        vx: &["-c"],
        kind: Kind::Cache,
        set: |j, v, c| {
            // vx gives the discovered threshold in KB when bare (vxbench's rule).
            j.cache = CachePolicy::parse_as(v, c.bare)?;
            Ok(())
        },
        show: |j| j.cache.name(),
    },
    Param {
        name: "engine",
        aliases: &[],
        label: "engine",
        noun: "engine",
        flag: Some("--engine"),
        axis: true,
        toml: "engine",
        vx: &["--engine"],
        kind: Kind::Choice,
        set: |j, v, _| {
            j.engine = EngineKind::parse(v)?;
            Ok(())
        },
        show: |j| j.engine.name().into(),
    },
    Param {
        name: "qd",
        aliases: &["queue_depth", "iodepth"],
        label: "queue depth",
        noun: "queue depth",
        flag: Some("--qd"),
        axis: true,
        toml: "queue_depth",
        vx: &["--qd"],
        kind: Kind::Ranged { min: 1, max: 4096 },
        set: |j, v, c| {
            j.queue_depth = parse_ranged(v, c.what, 1, 4096)? as u32;
            Ok(())
        },
        show: |j| j.queue_depth.to_string(),
    },
    Param {
        name: "threads",
        aliases: &["nthreads"],
        label: "threads",
        noun: "thread count",
        flag: Some("--threads"),
        axis: true,
        toml: "threads",
        vx: &["nthreads"],
        kind: Kind::Ranged {
            min: 1,
            max: MAX_THREADS as u64,
        },
        set: |j, v, c| {
            j.threads = parse_ranged(v, c.what, 1, MAX_THREADS as u64)? as u32;
            Ok(())
        },
        show: |j| j.threads.to_string(),
    },
    Param {
        name: "count",
        aliases: &["iocount", "io_count"],
        label: "I/Os per thread",
        noun: "I/O count",
        flag: Some("--count"),
        axis: true,
        toml: "io_count",
        vx: &["iocount"],
        kind: Kind::Count,
        set: |j, v, c| {
            j.io_count = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.io_count),
    },
    Param {
        name: "time",
        aliases: &["runtime"],
        label: "run time",
        noun: "run time",
        flag: Some("--time"),
        axis: true,
        toml: "time_s",
        vx: &["--time"],
        kind: Kind::Duration,
        set: |j, v, _| {
            j.time_s = Some(secs(v)?);
            Ok(())
        },
        show: |j| opt(j.time_s),
    },
    Param {
        name: "ramp",
        aliases: &["ramp_time"],
        label: "warm-up",
        noun: "warm-up time",
        flag: Some("--ramp"),
        axis: true,
        toml: "ramp_s",
        vx: &[],
        kind: Kind::Duration,
        set: |j, v, _| {
            j.ramp_s = Some(secs(v)?);
            Ok(())
        },
        show: |j| opt(j.ramp_s),
    },
    Param {
        name: "ramp_bytes",
        aliases: &[],
        label: "warm-up bytes",
        noun: "warm-up size",
        flag: Some("--ramp-bytes"),
        axis: true,
        toml: "ramp_bytes",
        vx: &[],
        kind: Kind::Bytes,
        set: |j, v, c| {
            j.ramp_bytes = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.ramp_bytes),
    },
    Param {
        name: "steady_state",
        aliases: &["steadystate", "ss"],
        label: "steady state",
        noun: "steady-state spec",
        flag: Some("--steady-state"),
        axis: true,
        toml: "steady_state",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.steady_state = Some(super::steady::SteadyState::parse(v, c.what)?);
            Ok(())
        },
        show: |j| opt(j.steady_state.as_ref().map(|s| s.spec())),
    },
    Param {
        name: "steady_state_max",
        aliases: &[],
        label: "steady-state max",
        noun: "longest steady-state run",
        flag: Some("--steady-state-max"),
        axis: true,
        toml: "steady_state_max_s",
        vx: &[],
        kind: Kind::Duration,
        set: |j, v, c| {
            j.steady_state_max_s = Some(secs(v).map_err(|e| usage!("{}: {}", c.what, e.0))?);
            Ok(())
        },
        show: |j| opt(j.steady_state_max_s),
    },
    Param {
        name: "cpus",
        aliases: &["cpus_allowed"],
        label: "cpus",
        noun: "CPU list",
        flag: Some("--cpus"),
        axis: false,
        toml: "cpus",
        vx: &[],
        kind: Kind::List,
        set: |j, v, c| {
            j.cpus = cpu_list(v, c.what)?;
            Ok(())
        },
        show: |j| crate::probe::host::cpu_list(&j.cpus),
    },
    Param {
        name: "nice",
        aliases: &[],
        label: "nice",
        noun: "nice value",
        flag: None,
        axis: false,
        toml: "nice",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.nice = Some(match v.trim().parse::<i8>() {
                Ok(n) if (-20..=19).contains(&n) => n,
                _ => return Err(usage!("bad {} '{v}': expected -20 to 19", c.what)),
            });
            Ok(())
        },
        show: |j| opt(j.nice),
    },
    Param {
        name: "think",
        aliases: &["thinktime"],
        label: "think time",
        noun: "think time",
        flag: Some("--think"),
        axis: true,
        toml: "think",
        vx: &[],
        kind: Kind::Duration,
        set: |j, v, c| {
            j.think = Some(Think::parse(v, c.what)?);
            Ok(())
        },
        show: |j| j.think.map(|t| t.spec()).unwrap_or_default(),
    },
    Param {
        name: "nrep",
        aliases: &["repeats"],
        label: "repetitions",
        noun: "repeat count",
        flag: Some("--nrep"),
        axis: true,
        toml: "repeats",
        vx: &["nrep"],
        kind: Kind::Ranged {
            min: 1,
            max: u32::MAX as u64,
        },
        set: |j, v, c| {
            j.repeats = parse_ranged(v, c.what, 1, u32::MAX as u64)? as u32;
            Ok(())
        },
        show: |j| j.repeats.to_string(),
    },
    Param {
        name: "rwmix",
        aliases: &["rdpct", "read_pct"],
        label: "read %",
        noun: "read percentage",
        flag: Some("--rwmix-read"),
        axis: true,
        toml: "read_pct",
        vx: &["rdpct"],
        kind: Kind::Ranged { min: 0, max: 100 },
        set: |j, v, c| {
            j.read_pct = parse_ranged(v, c.what, 0, 100)? as u8;
            Ok(())
        },
        show: |j| j.read_pct.to_string(),
    },
    Param {
        name: "seed",
        aliases: &["randseed"],
        label: "seed",
        noun: "seed",
        flag: Some("--seed"),
        axis: true,
        toml: "seed",
        vx: &["randseed", "--seed"],
        kind: Kind::Count,
        set: |j, v, c| {
            j.seed = size(v, c)?;
            Ok(())
        },
        show: |j| j.seed.to_string(),
    },
    flag_bool!(
        "dsync",
        Some("--dsync"),
        true,
        "open.dsync",
        &["-o dsync"],
        "O_DSYNC",
        open.dsync
    ),
    flag_bool!(
        "sync",
        Some("--sync"),
        true,
        "open.sync",
        &["-o sync"],
        "O_SYNC",
        open.sync
    ),
    flag_bool!(
        "fsync",
        Some("--fsync"),
        true,
        "fsync",
        &["fsync"],
        "fsync",
        fsync
    ),
    Param {
        name: "processes",
        aliases: &["workers"],
        label: "workers",
        noun: "processes",
        flag: Some("--processes"),
        axis: true,
        toml: "workers",
        vx: &["-P/-p/-t"],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.workers = WorkerMode::parse(v, c.what)?;
            Ok(())
        },
        show: |j| j.workers.name().into(),
    },
    Param {
        name: "distribution",
        aliases: &["random_distribution"],
        label: "distribution",
        noun: "distribution",
        flag: Some("--distribution"),
        axis: true,
        toml: "distribution",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.distribution = Distribution::parse(v, c.what)?;
            Ok(())
        },
        show: |j| j.distribution.spec(),
    },
    Param {
        name: "buffer_compress",
        aliases: &["buffer_compress_percentage"],
        label: "compress %",
        noun: "buffer compress percentage",
        flag: Some("--buffer-compress"),
        axis: true,
        toml: "buffer_compress",
        vx: &[],
        kind: Kind::Ranged { min: 0, max: 100 },
        set: |j, v, c| {
            j.buffer_compress = Some(parse_ranged(v, c.what, 0, 100)? as u8);
            Ok(())
        },
        show: |j| opt(j.buffer_compress),
    },
    Param {
        name: "dedupe",
        aliases: &["dedupe_percentage"],
        label: "dedupe %",
        noun: "dedupe percentage",
        flag: Some("--dedupe"),
        axis: true,
        toml: "dedupe",
        vx: &[],
        kind: Kind::Ranged { min: 0, max: 100 },
        set: |j, v, c| {
            j.dedupe = Some(parse_ranged(v, c.what, 0, 100)? as u8);
            Ok(())
        },
        show: |j| opt(j.dedupe),
    },
    Param {
        name: "dedupe_mode",
        aliases: &[],
        label: "dedupe mode",
        noun: "dedupe mode",
        flag: Some("--dedupe-mode"),
        axis: true,
        toml: "dedupe_mode",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.dedupe_mode = Some(DedupeMode::parse(v, c.what)?);
            Ok(())
        },
        show: |j| opt(j.dedupe_mode.map(|m| m.name())),
    },
    Param {
        name: "dedupe_working_set",
        aliases: &["dedupe_working_set_percentage"],
        label: "dedupe working set %",
        noun: "dedupe working set percentage",
        flag: Some("--dedupe-working-set"),
        axis: true,
        toml: "dedupe_working_set",
        vx: &[],
        kind: Kind::Ranged { min: 1, max: 100 },
        set: |j, v, c| {
            j.dedupe_working_set = Some(parse_ranged(v, c.what, 1, 100)? as u8);
            Ok(())
        },
        show: |j| opt(j.dedupe_working_set),
    },
    // Not axes: run's flags, vx's options and TOML keys only.
    // Not an axis: its per-direction form joins lists with commas, as an axis joins values.
    Param {
        name: "bssplit",
        aliases: &[],
        label: "size split",
        noun: "size split",
        flag: Some("--bssplit"),
        axis: false,
        toml: "bssplit",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.bssplit = Some(BsSplit::parse(v, c.what)?);
            Ok(())
        },
        show: |j| opt(j.bssplit.as_ref().map(|s| s.spec())),
    },
    flag_bool!(
        "append",
        Some("--append"),
        false,
        "open.append",
        &["-o append"],
        "O_APPEND",
        open.append
    ),
    flag_bool!(
        "trunc",
        Some("--trunc"),
        false,
        "open.trunc",
        &["-o trunc"],
        "O_TRUNC",
        open.trunc
    ),
    flag_bool!(
        "remove",
        Some("--remove"),
        false,
        "remove",
        &["remove"],
        "remove",
        remove
    ),
    flag_bool!(
        "mlock",
        Some("--mlock"),
        false,
        "mlock",
        &["-m"],
        "mlock",
        mlock
    ),
    flag_bool!(
        "sqpoll",
        Some("--sqpoll"),
        false,
        "sqpoll",
        &["--sqpoll"],
        "sqpoll",
        sqpoll
    ),
    flag_bool!(
        "hipri",
        Some("--hipri"),
        false,
        "hipri",
        &["--hipri"],
        "hipri",
        hipri
    ),
    flag_bool!(
        "keep",
        Some("--keep"),
        false,
        "keep",
        &["--keep"],
        "keep",
        keep
    ),
    flag_bool!(
        "force",
        Some("--force"),
        false,
        "force",
        &["--force"],
        "force",
        force
    ),
    flag_bool!(
        "drop_cache",
        Some("--drop-cache"),
        false,
        "drop_cache",
        &["--drop-cache"],
        "drop cache",
        drop_cache
    ),
    flag_bool!(
        "invalidate",
        Some("--no-invalidate"),
        false,
        "invalidate",
        &[],
        "invalidate",
        invalidate
    ),
    flag_bool!(
        "reserveonly",
        None,
        false,
        "space.reserve_only",
        &["reserveonly"],
        "reserve only",
        space.reserve_only
    ),
    Param {
        name: "advise",
        aliases: &["advice"],
        label: "advice",
        noun: "advice",
        flag: Some("--advise"),
        axis: false,
        toml: "advice",
        vx: &["-c"],
        kind: Kind::List,
        // Advice adds up: each list (run's --advise, each vx -c) appends.
        set: |j, v, _| {
            for x in v.split(',').filter(|x| !x.is_empty()) {
                if j.advice.len() >= MAX_ADVICE {
                    return Err(usage!(
                        "too much advice: at most {MAX_ADVICE} values in all (noreuse, random, seq)"
                    ));
                }
                j.advice.push(Advice::parse(x)?);
            }
            Ok(())
        },
        show: |j| {
            let names: Vec<&str> = j.advice.iter().map(|a| a.name()).collect();
            names.join(",")
        },
    },
    Param {
        name: "extsize",
        aliases: &[],
        label: "extent size",
        noun: "extent size",
        flag: Some("--extsize"),
        axis: false,
        toml: "space.extsize",
        vx: &["extsize (-e)"],
        kind: Kind::Size,
        set: |j, v, c| {
            j.space.extsize = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.space.extsize),
    },
    Param {
        name: "reserve",
        aliases: &["reservation"],
        label: "reservation",
        noun: "reservation",
        flag: Some("--reserve"),
        axis: false,
        toml: "space.reservation",
        vx: &["reservation (-r)"],
        kind: Kind::Size,
        set: |j, v, c| {
            j.space.reservation = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.space.reservation),
    },
    Param {
        name: "truncup",
        aliases: &[],
        label: "truncup",
        noun: "truncup size",
        flag: None,
        axis: false,
        toml: "space.truncup",
        vx: &["truncup"],
        kind: Kind::Size,
        set: |j, v, c| {
            j.space.truncup = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.space.truncup),
    },
    Param {
        name: "space_flags",
        aliases: &[],
        label: "space flags",
        noun: "space flags",
        flag: Some("--space-flags"),
        axis: false,
        toml: "space.flags",
        vx: &["-f"],
        kind: Kind::List,
        set: |j, v, c| j.space.flags.apply_list(v, c.what),
        show: |j| j.space.flags.names().join(","),
    },
    Param {
        name: "rate_iops",
        aliases: &[],
        label: "rate (I/O/s)",
        noun: "I/O rate",
        flag: Some("--rate-iops"),
        axis: true,
        toml: "rate.iops",
        vx: &["--rate-iops"],
        kind: Kind::Count,
        set: |j, v, c| {
            let each = PerDirection::parse(v, c.what, |f| size(f, c))?;
            j.rate.set(RateMeasure::Iops, each);
            Ok(())
        },
        show: |j| j.rate.show(RateMeasure::Iops),
    },
    Param {
        name: "rate_bytes",
        aliases: &[],
        label: "rate (bytes/s)",
        noun: "byte rate",
        flag: Some("--rate-bytes"),
        axis: true,
        toml: "rate.bytes_per_sec",
        vx: &["--rate-bytes"],
        kind: Kind::Bytes,
        set: |j, v, c| {
            let each = PerDirection::parse(v, c.what, |f| size(f, c))?;
            j.rate.set(RateMeasure::Bytes, each);
            Ok(())
        },
        show: |j| j.rate.show(RateMeasure::Bytes),
    },
    Param {
        name: "rate_scope",
        aliases: &[],
        label: "rate scope",
        noun: "rate scope",
        flag: Some("--rate-scope"),
        axis: false,
        toml: "rate.scope",
        vx: &["--rate-scope"],
        kind: Kind::Choice,
        set: |j, v, _| {
            j.rate.scope = RateScope::parse(v)?;
            Ok(())
        },
        show: |j| j.rate.scope.name().into(),
    },
    Param {
        name: "rate_process",
        aliases: &[],
        label: "rate process",
        noun: "rate process",
        flag: Some("--rate-process"),
        axis: false,
        toml: "rate.process",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.rate.process = RateProcess::parse(v, c.what)?;
            Ok(())
        },
        show: |j| j.rate.process.name().into(),
    },
    Param {
        name: "rate_min",
        aliases: &[],
        label: "minimum rate (bytes/s)",
        noun: "minimum byte rate",
        flag: Some("--rate-min"),
        axis: false,
        toml: "rate.min_bytes_per_sec",
        vx: &[],
        kind: Kind::Bytes,
        set: |j, v, c| {
            j.rate.min_bytes_per_sec = Some(positive(size(v, c)?, c)?);
            Ok(())
        },
        show: |j| opt(j.rate.min_bytes_per_sec),
    },
    Param {
        name: "rate_iops_min",
        aliases: &[],
        label: "minimum rate (I/O/s)",
        noun: "minimum I/O rate",
        flag: Some("--rate-iops-min"),
        axis: false,
        toml: "rate.min_iops",
        vx: &[],
        kind: Kind::Count,
        set: |j, v, c| {
            j.rate.min_iops = Some(positive(size(v, c)?, c)?);
            Ok(())
        },
        show: |j| opt(j.rate.min_iops),
    },
    Param {
        name: "rate_cycle",
        aliases: &[],
        label: "rate cycle",
        noun: "minimum-rate cycle",
        flag: Some("--rate-cycle"),
        axis: false,
        toml: "rate.cycle_ms",
        vx: &[],
        kind: Kind::Duration,
        set: |j, v, c| {
            let ms = parse_duration(v)?.as_millis();
            if !(1..=MAX_RATE_CYCLE_MS as u128).contains(&ms) {
                return Err(usage!(
                    "bad {} '{v}': from 1ms to {} s",
                    c.what,
                    MAX_RATE_CYCLE_MS / 1000
                ));
            }
            j.rate.cycle_ms = Some(ms as u64);
            Ok(())
        },
        show: |j| {
            j.rate
                .cycle_ms
                .map(|ms| format!("{ms}ms"))
                .unwrap_or_default()
        },
    },
    flag_bool!(
        "verify",
        Some("--verify"),
        false,
        "verify",
        &["--verify"],
        "verify",
        verify
    ),
    Param {
        name: "verify_backlog",
        aliases: &[],
        label: "verify backlog",
        noun: "verify backlog",
        flag: Some("--verify-backlog"),
        axis: false,
        toml: "verify_backlog",
        vx: &["--verify-backlog"],
        kind: Kind::Count,
        set: |j, v, c| {
            j.verify_backlog = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.verify_backlog),
    },
    Param {
        name: "journal",
        aliases: &[],
        label: "journal",
        noun: "journal",
        flag: Some("--journal"),
        axis: false,
        toml: "journal",
        vx: &["--journal"],
        kind: Kind::Text,
        set: |j, v, c| {
            if v.is_empty() {
                return Err(usage!("empty {}: name a new file", c.what));
            }
            j.journal = Some(crate::job::dash_safe(std::path::Path::new(v)));
            Ok(())
        },
        show: |j| {
            j.journal
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        },
    },
    Param {
        name: "fsync_every",
        aliases: &[],
        label: "fsync every",
        noun: "fsync interval",
        flag: Some("--fsync-every"),
        axis: false,
        toml: "fsync_every",
        vx: &["--fsync-every"],
        kind: Kind::Count,
        set: |j, v, c| {
            j.fsync_every = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.fsync_every),
    },
    Param {
        name: "fdatasync_every",
        aliases: &[],
        label: "fdatasync every",
        noun: "fdatasync interval",
        flag: Some("--fdatasync-every"),
        axis: false,
        toml: "fdatasync_every",
        vx: &["--fdatasync-every"],
        kind: Kind::Count,
        set: |j, v, c| {
            j.fdatasync_every = Some(size(v, c)?);
            Ok(())
        },
        show: |j| opt(j.fdatasync_every),
    },
    flag_bool!(
        "run_same_offset",
        Some("--run-same-offset"),
        false,
        "run_same_offset",
        &[],
        "run same offset",
        run_same_offset
    ),
    flag_bool!(
        "random_slices",
        Some("--random-slices"),
        false,
        "random_slices",
        &[],
        "random slices",
        random_slices
    ),
    flag_bool!(
        "random_map",
        Some("--random-map"),
        false,
        "random_map",
        &[],
        "random map",
        random_map
    ),
    Param {
        name: "buffer_pattern",
        aliases: &[],
        label: "buffer pattern",
        noun: "buffer pattern",
        flag: Some("--buffer-pattern"),
        axis: false,
        toml: "buffer_pattern",
        vx: &[],
        kind: Kind::Choice,
        set: |j, v, c| {
            j.buffer_pattern = Some(BufferPattern::parse(v, c.what)?);
            Ok(())
        },
        show: |j| {
            j.buffer_pattern
                .as_ref()
                .map(|p| p.spec())
                .unwrap_or_default()
        },
    },
    Param {
        name: "name",
        aliases: &[],
        label: "name",
        noun: "name",
        flag: Some("--name"),
        axis: false,
        toml: "name",
        vx: &[],
        kind: Kind::Text,
        set: |j, v, _| {
            j.name = v.to_string();
            Ok(())
        },
        show: |j| j.name.clone(),
    },
];

/// The parameter with this canonical name or alias.
pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS
        .iter()
        .find(|p| p.name == name || p.aliases.contains(&name))
}

/// The parameter with this canonical name. Front ends name their parameters with literals
/// that the table tests check, so a miss is a programming error caught by those tests.
pub fn get(name: &str) -> &'static Param {
    PARAMS
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no Job parameter named {name}"))
}

#[cfg(test)]
mod tests;
