//! vxbench command-line compatibility: `fsbench vx` takes vxbench's own argv (getopt style,
//! `-w workload -i subopts -o opentypes -c cacheopts -e -r -f -P -p -t -m -s -v -k -M -h`) and
//! builds a Job. vxbench conventions hold: a bare iosize, maxfilesize, truncup, extsize or
//! reservation is in KB; `iocount=128k` is 131072 I/Os.

use crate::error::UsageError;
use crate::job::params::{self, Front, Kind, Param, PARAMS};
use crate::job::{EngineKind, Job, WorkerMode};
use crate::report::{Format, ReportOptions, Runs};
use crate::units::RateUnit;
use crate::usage;
use std::path::PathBuf;

pub(crate) const WORKLOADS: &[&str] = &[
    "read",
    "write",
    "rand_read",
    "rand_write",
    "rand_mixed",
    "mmap_read",
    "mmap_write",
];

/// I/Os per thread when neither iocount nor --time is given (vxbench has no documented default).
pub(crate) const DEFAULT_IOCOUNT: u64 = 1024;

/// A parsed vx command line: the Job plus how to show it.
#[derive(Debug, Clone)]
pub(crate) struct VxCommand {
    pub job: Job,
    pub report: ReportOptions,
    pub format: Format,
    pub output: Option<PathBuf>,
    pub help: bool,
    /// The format was given as `--output-format`, the spelling of earlier releases (the
    /// front end says it is deprecated).
    pub old_format_flag: bool,
}

/// vxbench's `-i` sub-options, each the vx spelling of a Job parameter in the table.
const SUBOPTS: &[&str] = &[
    "nrep",
    "nthreads",
    "iosize",
    "fsync",
    "remove",
    "iocount",
    "reserveonly",
    "maxfilesize",
    "randseed",
    "truncup",
    "rdpct",
];

/// The table entry vxbench spells this way (`iosize`, `-o sync`, `--qd`).
fn vx_param(spelling: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.vx.contains(&spelling))
}

/// Set the parameter vxbench spells `spelling`; a switch (no value) is turned on.
fn set_vx(job: &mut Job, p: &Param, spelling: &str, value: Option<&str>) -> Result<(), UsageError> {
    p.set(job, value.unwrap_or("true"), Front::Vx(spelling))
}

/// `-i nrep=2,nthreads=4,iosize=8k,fsync,...`
fn apply_subopts(job: &mut Job, s: &str, iocount_set: &mut bool) -> Result<(), UsageError> {
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (item, None),
        };
        let p = vx_param(k)
            .filter(|_| SUBOPTS.contains(&k))
            .ok_or_else(|| {
                usage!(
                    "unknown -i sub-option '{k}': expected {}",
                    SUBOPTS.join(", ").replacen(", rdpct", " or rdpct", 1)
                )
            })?;
        match (p.kind == Kind::Bool, v) {
            (true, Some(_)) => return Err(usage!("-i {k} takes no value")),
            (false, None) => return Err(usage!("-i {k} needs a value: {k}=N")),
            _ => set_vx(job, p, k, v)?,
        }
        if p.name == "count" {
            *iocount_set = true;
        }
    }
    Ok(())
}

/// `-c direct,noreuse,discovered=256,...`: at most one cache policy, any advice.
fn apply_cacheopts(job: &mut Job, s: &str, policy_set: &mut bool) -> Result<(), UsageError> {
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (item, None),
        };
        match (name, value) {
            ("direct" | "dsync" | "concurrent" | "discovered", None) | ("discovered", Some(_)) => {
                let before = job.cache;
                params::get("cache").set(job, item, Front::Vx("-c"))?;
                if *policy_set && job.cache != before {
                    return Err(usage!(
                        "-c: more than one cache policy given ({} and {}): choose one",
                        before.name(),
                        job.cache.name()
                    ));
                }
                *policy_set = true;
            }
            ("noreuse" | "random" | "seq", None) => {
                params::get("advise").set(job, item, Front::Vx("-c"))?
            }
            (_, Some(_)) => return Err(usage!("-c {item}: only discovered takes a value")),
            _ => {
                return Err(usage!(
                    "unknown -c cache option '{item}': expected direct, dsync, noreuse, random, seq, discovered[=SIZE] or concurrent"
                ))
            }
        }
    }
    Ok(())
}

/// `-o append,sync,dsync,trunc`
fn apply_opentypes(job: &mut Job, s: &str) -> Result<(), UsageError> {
    for o in s.split(',').filter(|x| !x.is_empty()) {
        let spelling = format!("-o {o}");
        let p = vx_param(&spelling).ok_or_else(|| {
            usage!("unknown -o open type '{o}': expected append, sync, dsync or trunc")
        })?;
        set_vx(job, p, &spelling, None)?;
    }
    Ok(())
}

/// Everything a vx command line sets besides the Job.
struct State {
    cmd: VxCommand,
    workload: Option<String>,
    iocount_set: bool,
    policy_set: bool,
}

/// vx's long options: fsbench's additions (`--engine`, `--qd`, ...) and `--` before targets.
/// Returns true when the rest of `args` were taken as targets.
fn parse_long(
    st: &mut State,
    args: &[String],
    i: &mut usize,
    long: &str,
) -> Result<bool, UsageError> {
    let (name, inline) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (long, None),
    };
    let val = |i: &mut usize| -> Result<String, UsageError> {
        match &inline {
            Some(v) => Ok(v.clone()),
            None => {
                *i += 1;
                args.get(*i)
                    .cloned()
                    .ok_or_else(|| usage!("--{name} needs a value"))
            }
        }
    };
    let spelling = format!("--{name}");
    let job = &mut st.cmd.job;
    match name {
        "" => {
            // After `--` a name may start with '-': keep it a path, never an option.
            job.targets
                .extend(args[*i + 1..].iter().map(|t| crate::job::dash_safe(t.as_ref())));
            return Ok(true);
        }
        "output" => st.cmd.output = Some(PathBuf::from(val(i)?)),
        "format" => st.cmd.format = Format::parse_for::<Runs>(&val(i)?, "--format")?,
        // The spelling of earlier releases, still read for one release.
        "output-format" => {
            st.cmd.format = Format::parse_for::<Runs>(&val(i)?, "--output-format")?;
            st.cmd.old_format_flag = true;
        }
        "help" => st.cmd.help = true,
        // As in `fsbench run`: keep the targets' cached pages (hot-cache runs).
        "no-invalidate" => {
            params::get("invalidate").set(job, "false", Front::Vx("--no-invalidate"))?
        }
        _ => match vx_param(&spelling) {
            Some(p) if p.kind == Kind::Bool => set_vx(job, p, &spelling, None)?,
            Some(p) => set_vx(job, p, &spelling, Some(&val(i)?))?,
            None => {
                return Err(usage!(
                    "unknown option --{name}: vx accepts vxbench's options plus --engine, --qd, --time, --rate-iops, --rate-bytes, --rate-scope, --sqpoll, --hipri, --seed, --output, --format, --keep, --force, --drop-cache, --no-invalidate, --verify, --verify-backlog, --journal, --fsync-every"
                ))
            }
        },
    }
    Ok(false)
}

/// A getopt cluster: flags may be combined (-vM), an option's value may be attached (-wread).
fn parse_cluster(st: &mut State, args: &[String], i: &mut usize) -> Result<(), UsageError> {
    let chars: Vec<char> = args[*i][1..].chars().collect();
    let workers =
        |job: &mut Job, v: &str| params::get("processes").set(job, v, Front::Vx("-P/-p/-t"));
    for (j, &c) in chars.iter().enumerate() {
        let job = &mut st.cmd.job;
        let report = &mut st.cmd.report;
        match c {
            'h' => st.cmd.help = true,
            'P' => workers(job, "per-user")?,
            'p' => workers(job, "per-thread")?,
            't' => workers(job, "threads")?,
            'm' => params::get("mlock").set(job, "true", Front::Vx("-m"))?,
            's' => report.summary_only = true,
            'v' => report.per_thread = true,
            'k' => report.unit = RateUnit::KiloBytes,
            'M' => report.unit = RateUnit::MegaBytes,
            'w' | 'i' | 'o' | 'c' | 'e' | 'r' | 'f' => {
                let rest: String = chars[j + 1..].iter().collect();
                let v = if rest.is_empty() {
                    *i += 1;
                    args.get(*i)
                        .cloned()
                        .ok_or_else(|| usage!("-{c} needs a value"))?
                } else {
                    rest
                };
                match c {
                    'w' => st.workload = Some(v),
                    'i' => apply_subopts(job, &v, &mut st.iocount_set)?,
                    'o' => apply_opentypes(job, &v)?,
                    'c' => apply_cacheopts(job, &v, &mut st.policy_set)?,
                    'e' => params::get("extsize").set(job, &v, Front::Vx("extsize (-e)"))?,
                    'r' => params::get("reserve").set(job, &v, Front::Vx("reservation (-r)"))?,
                    _ => params::get("space_flags").set(job, &v, Front::Vx("-f"))?,
                }
                // The value took the rest of the cluster.
                return Ok(());
            }
            _ => {
                return Err(usage!(
                    "unknown option -{c}: expected one of -h -P -p -t -m -s -v -k -M -w -i -o -c -e -r -f (see fsbench vx -h)"
                ))
            }
        }
    }
    Ok(())
}

/// After the options: the workload sets the access pattern (and the mmap engine), the
/// default I/O count applies, and the Job is checked.
fn finish(mut st: State) -> Result<VxCommand, UsageError> {
    let w = st
        .workload
        .ok_or_else(|| usage!("no workload: give -w with one of {}", WORKLOADS.join(", ")))?;
    let job = &mut st.cmd.job;
    let before = job.engine;
    job.engine = EngineKind::Sync;
    params::get("rw").set(job, &w, Front::Vx("workload"))?;
    if job.engine == EngineKind::Mmap {
        if before != EngineKind::Sync {
            return Err(usage!(
                "-w {w} uses the mmap engine; it cannot be combined with --engine"
            ));
        }
    } else {
        job.engine = before;
    }
    job.name = format!("vx {w}");
    if !st.iocount_set && job.time_s.is_none() {
        job.io_count = Some(DEFAULT_IOCOUNT);
    }
    if job.targets.is_empty() {
        return Err(usage!(
            "no file name: usage: fsbench vx -w workload [options] filename ..."
        ));
    }
    job.validate()?;
    Ok(st.cmd)
}

/// Parse vxbench's argv (without the program name).
pub(crate) fn parse(args: &[String]) -> Result<VxCommand, UsageError> {
    let mut st = State {
        cmd: VxCommand {
            job: Job {
                name: "vx".into(),
                block_size: 8192,
                workers: WorkerMode::ProcessPerUser,
                ..Job::default()
            },
            // vxbench's output: KB/s (KB = 1024 bytes) unless -M.
            report: ReportOptions {
                unit: RateUnit::KiloBytes,
                ..ReportOptions::default()
            },
            format: Format::Text,
            output: None,
            help: false,
            old_format_flag: false,
        },
        workload: None,
        iocount_set: false,
        policy_set: false,
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(long) = a.strip_prefix("--") {
            if parse_long(&mut st, args, &mut i, long)? {
                break;
            }
        } else if a.len() < 2 || !a.starts_with('-') {
            st.cmd.job.targets.push(PathBuf::from(a));
        } else {
            parse_cluster(&mut st, args, &mut i)?;
        }
        i += 1;
    }
    if st.cmd.help {
        return Ok(st.cmd);
    }
    finish(st)
}

pub(crate) const HELP: &str = "\
usage: fsbench vx -w workload [options] filename ...

vxbench's command line, run on Linux. Several file names run in parallel (one user each);
with nthreads each user runs that many threads: users x nthreads in total.

  -h            this help
  -P            processes for users, threads for multithreaded I/O (default)
  -p            processes for users and for multithreaded I/O
  -t            threads for users and for multithreaded I/O
  -m            lock I/O buffers in memory (mlock)
  -s            for multiuser tests print only the summary
  -v            print per-thread results
  -k            throughput in KB/sec (default)       -M  throughput in MB/sec
  -w workload   read write rand_read rand_write rand_mixed mmap_read mmap_write
  -i subopts    comma-separated:
                  nrep=n        repeat the I/O loop n times
                  nthreads=n    threads per file
                  iosize=n      bytes per I/O (bare number = KB; k m g suffixes)
                  fsync         fsync each file after writing it
                  remove        remove each file after the test
                  iocount=n     I/Os per thread (128k = 131072); default 1024
                  reserveonly   reserve space, do no I/O
                  maxfilesize=n file size / random offset range (bare = KB)
                  randseed=n    seed for random offsets
                  truncup=n     initial (sparse) file size for random I/O (bare = KB)
                  rdpct=n       read percentage for rand_mixed
  -o opentypes  append sync dsync trunc
  -c cacheopts  direct dsync noreuse random seq discovered[=SIZE] concurrent
                (discovered: I/Os larger than SIZE (default 256k) direct, the rest buffered;
                 concurrent: preallocated, fully written, O_DIRECT, never extended)
  -e extsize    fixed extent size hint (XFS; bare = KB)
  -r size       reserve space with fallocate (bare = KB)
  -f flags      align chgsiz contig noextend noreserve trim

fsbench additions: --engine sync|mmap|uring --qd N --time DUR --rate-iops N --rate-bytes N
  --rate-scope thread|total --sqpoll --hipri --seed N --output FILE.json --format text|json|csv
  --keep --force --drop-cache --no-invalidate (keep the files' cached pages: hot-cache runs)
  --verify --verify-backlog N --journal FILE --fsync-every N
  --repeat N (run N times on the same files: median, 95 % interval and range per figure)

Missing files are created at the size the workload needs and removed afterwards;
existing files fsbench did not create, and block devices holding data, are never
written without --force.

Examples:
  fsbench vx -w rand_read -i iosize=4k,iocount=10000,nthreads=4 -c direct data.f
  fsbench vx -w seq_write -i iosize=1m,iocount=256 --format json --output vx.json data.f
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Access, CachePolicy};
    use proptest::prelude::*;

    fn p(s: &str) -> Result<VxCommand, UsageError> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn paper_example() {
        let c = p("-w write -i iosize=8k,iocount=128k /dev/vx/dsk/perfvoll").unwrap();
        assert_eq!(c.job.access, Access::Write);
        assert_eq!(c.job.block_size, 8192);
        assert_eq!(c.job.io_count, Some(131072));
        assert_eq!(c.job.targets, vec![PathBuf::from("/dev/vx/dsk/perfvoll")]);
    }

    #[test]
    fn kb_conventions() {
        let c = p("-w rand_read -i iocount=50,iosize=8,maxfilesize=35g f").unwrap();
        assert_eq!(c.job.block_size, 8192);
        assert_eq!(c.job.file_size, Some(35 << 30));
        let c = p("-w rand_write -i truncup=1024,iosize=2 f").unwrap();
        assert_eq!(c.job.space.truncup, Some(1 << 20));
        assert_eq!(c.job.block_size, 2048);
    }

    #[test]
    fn everything() {
        let c = p("-p -m -s -v -M -w rand_mixed -i nthreads=4,iosize=2k,iocount=20k,rdpct=70,nrep=2,fsync,remove,randseed=9 -o sync,dsync -c direct,noreuse,random,seq f1 f2 f3").unwrap();
        let j = &c.job;
        assert_eq!(j.workers, WorkerMode::ProcessPerThread);
        assert!(j.mlock && j.fsync && j.remove && j.open.sync && j.open.dsync);
        assert!(c.report.summary_only && c.report.per_thread);
        assert_eq!(c.report.unit, RateUnit::MegaBytes);
        assert_eq!(j.access, Access::RandRw);
        assert_eq!((j.threads, j.read_pct, j.repeats, j.seed), (4, 70, 2, 9));
        assert_eq!(j.cache, CachePolicy::Direct);
        assert_eq!(j.advice.len(), 3);
        assert_eq!(j.targets.len(), 3);
        let c = p("-t -w write -e 64 -r 1024 -f align,chgsiz,contig,noextend,noreserve,trim -o append,trunc f").unwrap_err();
        assert!(c.0.contains("contradict"), "{}", c.0);
        let c =
            p("-t -w write -e 64 -r 1024 -f align,chgsiz,contig,noextend,trim -o trunc f").unwrap();
        assert_eq!(c.job.space.extsize, Some(65536));
        assert_eq!(c.job.space.reservation, Some(1 << 20));
        assert!(c.job.space.flags.contig && c.job.space.flags.trim);
    }

    #[test]
    fn combined_flags_and_attached_values() {
        let c = p("-vM -wread -iiosize=64,iocount=10 f").unwrap();
        assert!(c.report.per_thread);
        assert_eq!(c.job.block_size, 65536);
        let c = p("-w read -c discovered=128 f").unwrap();
        assert_eq!(
            c.job.cache,
            CachePolicy::Discovered {
                threshold: 128 * 1024
            }
        );
        let c = p("-t -P -w mmap_read f").unwrap();
        assert_eq!(c.job.workers, WorkerMode::ProcessPerUser);
        assert_eq!(c.job.engine, EngineKind::Mmap);
        assert_eq!(c.job.io_count, Some(DEFAULT_IOCOUNT));
    }

    #[test]
    fn errors_are_clear() {
        assert!(p("-w frob f").unwrap_err().0.contains("unknown workload"));
        assert!(p("-w read -i iosize f")
            .unwrap_err()
            .0
            .contains("needs a value"));
        assert!(p("-w read -i bogus=1 f")
            .unwrap_err()
            .0
            .contains("unknown -i"));
        assert!(p("-w read -c direct,concurrent f")
            .unwrap_err()
            .0
            .contains("more than one"));
        assert!(p("-w read -o weird f")
            .unwrap_err()
            .0
            .contains("unknown -o"));
        assert!(p("-w read -x f")
            .unwrap_err()
            .0
            .contains("unknown option -x"));
        assert!(p("-w read").unwrap_err().0.contains("no file name"));
        assert!(p("-i iosize=8 f").unwrap_err().0.contains("no workload"));
        assert!(p("-w read -i").unwrap_err().0.contains("needs a value"));
    }

    proptest! {
        #[test]
        fn never_panics(args in prop::collection::vec("-?[a-zA-Z_=,0-9.-]{0,12}", 0..8)) {
            let _ = parse(&args);
        }

        #[test]
        fn subopt_strings_never_panic(s in "\\PC{0,40}") {
            let _ = parse(&["-w".into(), "read".into(), "-i".into(), s.clone(), "f".into()]);
            let _ = parse(&["-w".into(), "read".into(), "-c".into(), s.clone(), "f".into()]);
            let _ = parse(&["-w".into(), "write".into(), "-f".into(), s, "f".into()]);
        }
    }
}
