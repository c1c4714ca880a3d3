//! vxbench command-line compatibility: `fsbench vx` takes vxbench's own argv (getopt style,
//! `-w workload -i subopts -o opentypes -c cacheopts -e -r -f -P -p -t -m -s -v -k -M -h`) and
//! builds a Job. vxbench conventions hold: a bare iosize, maxfilesize, truncup, extsize or
//! reservation is in KB; `iocount=128k` is 131072 I/Os.

use crate::error::UsageError;
use crate::job::{Access, Advice, CachePolicy, EngineKind, Job, WorkerMode};
use crate::report::{Format, ReportOptions, Runs};
use crate::units::{parse_duration, parse_size_as, BareUnit, RateUnit};
use crate::usage;
use std::path::PathBuf;

pub const WORKLOADS: &[&str] = &[
    "read",
    "write",
    "rand_read",
    "rand_write",
    "rand_mixed",
    "mmap_read",
    "mmap_write",
];

/// I/Os per thread when neither iocount nor --time is given (vxbench has no documented default).
pub const DEFAULT_IOCOUNT: u64 = 1024;

/// A parsed vx command line: the Job plus how to show it.
#[derive(Debug, Clone)]
pub struct VxCommand {
    pub job: Job,
    pub report: ReportOptions,
    pub format: Format,
    pub output: Option<PathBuf>,
    pub help: bool,
}

fn kb(s: &str, what: &str) -> Result<u64, UsageError> {
    parse_size_as(s, BareUnit::Kilobytes, what)
}

fn count(s: &str, what: &str) -> Result<u64, UsageError> {
    parse_size_as(s, BareUnit::Count, what)
}

fn apply_subopts(job: &mut Job, s: &str, iocount_set: &mut bool) -> Result<(), UsageError> {
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (item, None),
        };
        fn need<'a>(k: &str, v: Option<&'a str>) -> Result<&'a str, UsageError> {
            v.ok_or_else(|| usage!("-i {k} needs a value: {k}=N"))
        }
        match k {
            "nrep" => job.repeats = count(need(k, v)?, "nrep")?.clamp(0, u32::MAX as u64) as u32,
            "nthreads" => {
                job.threads = count(need(k, v)?, "nthreads")?.min(u32::MAX as u64) as u32
            }
            "iosize" => job.block_size = kb(need(k, v)?, "iosize")?,
            "iocount" => {
                job.io_count = Some(count(need(k, v)?, "iocount")?);
                *iocount_set = true;
            }
            "maxfilesize" => job.file_size = Some(kb(need(k, v)?, "maxfilesize")?),
            "truncup" => job.space.truncup = Some(kb(need(k, v)?, "truncup")?),
            "randseed" => job.seed = count(need(k, v)?, "randseed")?,
            "rdpct" => {
                let p = count(need(k, v)?, "rdpct")?;
                if p > 100 {
                    return Err(usage!("-i rdpct={p}: a percentage from 0 to 100"));
                }
                job.read_pct = p as u8
            }
            "fsync" | "remove" | "reserveonly" if v.is_some() => {
                return Err(usage!("-i {k} takes no value"))
            }
            "fsync" => job.fsync = true,
            "remove" => job.remove = true,
            "reserveonly" => job.space.reserve_only = true,
            _ => {
                return Err(usage!(
                    "unknown -i sub-option '{k}': expected nrep, nthreads, iosize, fsync, remove, iocount, reserveonly, maxfilesize, randseed, truncup or rdpct"
                ))
            }
        }
    }
    Ok(())
}

fn apply_cacheopts(job: &mut Job, s: &str, policy_set: &mut bool) -> Result<(), UsageError> {
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let mut set_policy = |p: CachePolicy| -> Result<(), UsageError> {
            if *policy_set && job.cache != p {
                return Err(usage!(
                    "-c: more than one cache policy given ({} and {}): choose one",
                    job.cache.name(),
                    p.name()
                ));
            }
            *policy_set = true;
            job.cache = p;
            Ok(())
        };
        match item.split_once('=') {
            Some(("discovered", v)) => {
                let threshold = kb(v, "discovered threshold")?;
                if threshold == 0 {
                    return Err(usage!("-c discovered=0: the threshold must be a size such as 256k"));
                }
                set_policy(CachePolicy::Discovered { threshold })?
            }
            Some(_) => return Err(usage!("-c {item}: only discovered takes a value")),
            None => match item {
                "direct" => set_policy(CachePolicy::Direct)?,
                "dsync" => set_policy(CachePolicy::Dsync)?,
                "concurrent" => set_policy(CachePolicy::Concurrent)?,
                "discovered" => set_policy(CachePolicy::Discovered {
                    threshold: crate::job::cache::DEFAULT_DISCOVERED_THRESHOLD,
                })?,
                "noreuse" | "random" | "seq" => job.advice.push(Advice::parse(item)?),
                _ => {
                    return Err(usage!(
                        "unknown -c cache option '{item}': expected direct, dsync, noreuse, random, seq, discovered[=SIZE] or concurrent"
                    ))
                }
            },
        }
    }
    Ok(())
}

/// Parse vxbench's argv (without the program name).
pub fn parse(args: &[String]) -> Result<VxCommand, UsageError> {
    let mut job = Job {
        name: "vx".into(),
        block_size: 8192,
        workers: WorkerMode::ProcessPerUser,
        ..Job::default()
    };
    let mut report = ReportOptions::default();
    let mut format = Format::Text;
    let mut output = None;
    let mut help = false;
    let mut workload: Option<String> = None;
    let mut iocount_set = false;
    let mut policy_set = false;
    let mut i = 0;
    let take = |i: &mut usize, rest: &str, flag: &str| -> Result<String, UsageError> {
        if !rest.is_empty() {
            return Ok(rest.to_string());
        }
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| usage!("{flag} needs a value"))
    };
    while i < args.len() {
        let a = &args[i];
        if let Some(long) = a.strip_prefix("--") {
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
            match name {
                "" => {
                    // After `--` a name may start with '-': keep it a path, never an option.
                    job.targets
                        .extend(args[i + 1..].iter().map(|t| crate::job::dash_safe(t.as_ref())));
                    break;
                }
                "engine" => job.engine = EngineKind::parse(&val(&mut i)?)?,
                "qd" => job.queue_depth = count(&val(&mut i)?, "--qd")?.min(u32::MAX as u64) as u32,
                "time" => job.time_s = Some(parse_duration(&val(&mut i)?)?.as_secs_f64()),
                "output" => output = Some(PathBuf::from(val(&mut i)?)),
                "output-format" => {
                    format = Format::parse_for::<Runs>(&val(&mut i)?, "--output-format")?
                }
                "seed" => job.seed = count(&val(&mut i)?, "--seed")?,
                "rate-iops" => job.rate.iops = Some(count(&val(&mut i)?, "--rate-iops")?),
                "rate-bytes" => {
                    job.rate.bytes_per_sec = Some(parse_size_as(&val(&mut i)?, BareUnit::Bytes, "--rate-bytes")?)
                }
                "rate-scope" => job.rate.scope = crate::job::RateScope::parse(&val(&mut i)?)?,
                "keep" => job.keep = true,
                "force" => job.force = true,
                "drop-cache" => job.drop_cache = true,
                "sqpoll" => job.sqpoll = true,
                "hipri" => job.hipri = true,
                "help" => help = true,
                _ => {
                    return Err(usage!(
                        "unknown option --{name}: vx accepts vxbench's options plus --engine, --qd, --time, --rate-iops, --rate-bytes, --rate-scope, --sqpoll, --hipri, --seed, --output, --output-format, --keep, --force, --drop-cache"
                    ))
                }
            }
            i += 1;
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            job.targets.push(PathBuf::from(a));
            i += 1;
            continue;
        }
        // A getopt cluster: flags may be combined (-vM), an option's value may be attached.
        let chars: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            let rest: String = chars[j + 1..].iter().collect();
            match c {
                'h' => help = true,
                'P' => job.workers = WorkerMode::ProcessPerUser,
                'p' => job.workers = WorkerMode::ProcessPerThread,
                't' => job.workers = WorkerMode::Threads,
                'm' => job.mlock = true,
                's' => report.summary_only = true,
                'v' => report.per_thread = true,
                'k' => report.unit = RateUnit::KiloBytes,
                'M' => report.unit = RateUnit::MegaBytes,
                'w' | 'i' | 'o' | 'c' | 'e' | 'r' | 'f' => {
                    let v = take(&mut i, &rest, &format!("-{c}"))?;
                    match c {
                        'w' => workload = Some(v),
                        'i' => apply_subopts(&mut job, &v, &mut iocount_set)?,
                        'o' => {
                            for o in v.split(',').filter(|x| !x.is_empty()) {
                                match o {
                                    "append" => job.open.append = true,
                                    "sync" => job.open.sync = true,
                                    "dsync" => job.open.dsync = true,
                                    "trunc" => job.open.trunc = true,
                                    _ => {
                                        return Err(usage!(
                                            "unknown -o open type '{o}': expected append, sync, dsync or trunc"
                                        ))
                                    }
                                }
                            }
                        }
                        'c' => apply_cacheopts(&mut job, &v, &mut policy_set)?,
                        'e' => job.space.extsize = Some(kb(&v, "extsize (-e)")?),
                        'r' => job.space.reservation = Some(kb(&v, "reservation (-r)")?),
                        'f' => job.space.flags.apply_list(&v, "-f")?,
                        _ => unreachable!(),
                    }
                    j = chars.len();
                    continue;
                }
                _ => {
                    return Err(usage!(
                        "unknown option -{c}: expected one of -h -P -p -t -m -s -v -k -M -w -i -o -c -e -r -f (see fsbench vx -h)"
                    ))
                }
            }
            j += 1;
        }
        i += 1;
    }
    if help {
        return Ok(VxCommand {
            job,
            report,
            format,
            output,
            help,
        });
    }
    let w = workload
        .ok_or_else(|| usage!("no workload: give -w with one of {}", WORKLOADS.join(", ")))?;
    let (access, engine) = match w.as_str() {
        "read" => (Access::Read, None),
        "write" => (Access::Write, None),
        "rand_read" => (Access::RandRead, None),
        "rand_write" => (Access::RandWrite, None),
        "rand_mixed" => (Access::RandRw, None),
        "mmap_read" => (Access::Read, Some(EngineKind::Mmap)),
        "mmap_write" => (Access::Write, Some(EngineKind::Mmap)),
        _ => {
            return Err(usage!(
                "unknown workload '{w}': expected one of {}",
                WORKLOADS.join(", ")
            ))
        }
    };
    job.access = access;
    if let Some(e) = engine {
        if job.engine != EngineKind::Sync {
            return Err(usage!(
                "-w {w} uses the mmap engine; it cannot be combined with --engine"
            ));
        }
        job.engine = e;
    }
    job.name = format!("vx {w}");
    if !iocount_set && job.time_s.is_none() {
        job.io_count = Some(DEFAULT_IOCOUNT);
    }
    if job.targets.is_empty() {
        return Err(usage!(
            "no file name: usage: fsbench vx -w workload [options] filename ..."
        ));
    }
    job.validate()?;
    Ok(VxCommand {
        job,
        report,
        format,
        output,
        help,
    })
}

pub const HELP: &str = "\
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
                (discovered: I/Os >= SIZE (default 256k) direct, smaller buffered;
                 concurrent: preallocated, fully written, O_DIRECT, never extended)
  -e extsize    fixed extent size hint (XFS; bare = KB)
  -r size       reserve space with fallocate (bare = KB)
  -f flags      align chgsiz contig noextend noreserve trim

fsbench additions: --engine sync|mmap|uring --qd N --time DUR --rate-iops N --rate-bytes N
  --rate-scope thread|total --sqpoll --hipri --seed N --output FILE.json --output-format text|json|csv
  --keep --force --drop-cache

Missing files are created at the size the workload needs and removed afterwards;
existing files fsbench did not create, and block devices holding data, are never
written without --force.
";

#[cfg(test)]
mod tests {
    use super::*;
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
        let c = p("-w mmap_read f").unwrap();
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
