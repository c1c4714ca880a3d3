//! IOR compatibility: `fsbench ior -w -r -b 4m -t 64k -s 2 -o /mnt/pfs/f ...` reads IOR's
//! command line ([`parse`]) and maps it onto fsbench Jobs and a distributed layout
//! ([`map`]): a write phase and a read phase, each one Job, over IOR's file (a file per rank
//! with `-F`, else one shared file, segmented or strided as `-s`, `-b` and `-t` lay it out).
//! The front end (`cli/ior.rs`) runs them through the ordinary executor: on this host, or on
//! every rank when mpirun started fsbench. A flag IOR has and fsbench does not is refused by
//! name, in one line.

use crate::error::UsageError;
use crate::job::{Access, CachePolicy, EngineKind, Job};
use crate::usage;
use std::path::PathBuf;

/// IOR's options as given (IOR's defaults where absent).
#[derive(Debug, Clone, PartialEq)]
pub struct IorOptions {
    /// `-a`: the I/O interface (POSIX: sync, MMAP: mmap, or an fsbench engine).
    pub engine: EngineKind,
    /// `-b`: bytes each rank writes in each segment.
    pub block: u64,
    /// `-t`: bytes per transfer (one I/O).
    pub transfer: u64,
    /// `-s`: segments.
    pub segments: u64,
    /// `-F`: a file per rank (else one shared file).
    pub file_per_proc: bool,
    /// `-C`: each rank reads another rank's data.
    pub reorder: bool,
    /// `-e`: fsync after the write phase.
    pub fsync: bool,
    /// `-Y`: fsync after every write.
    pub fsync_per_write: bool,
    /// `-g`: barriers between open, write/read and close.
    pub barriers: bool,
    pub write: bool,
    pub read: bool,
    /// `-W`: check the written data.
    pub check_write: bool,
    /// `-z`: random offsets (each transfer once).
    pub random: bool,
    /// `-k`: keep the file(s).
    pub keep: bool,
    /// `-o`: the test file.
    pub path: PathBuf,
    /// `-i`: iterations.
    pub iterations: u32,
    /// `-D`: stop a phase this many seconds after it started.
    pub deadline_s: Option<u64>,
    /// `-d`: seconds between iterations.
    pub delay_s: u64,
    /// `-B`: O_DIRECT.
    pub direct: bool,
}

impl Default for IorOptions {
    fn default() -> Self {
        IorOptions {
            engine: EngineKind::Sync,
            block: 1 << 20,
            transfer: 256 << 10,
            segments: 1,
            file_per_proc: false,
            reorder: false,
            fsync: false,
            fsync_per_write: false,
            barriers: false,
            write: false,
            read: false,
            check_write: false,
            random: false,
            keep: false,
            path: PathBuf::from("testFile"),
            iterations: 1,
            deadline_s: None,
            delay_s: 0,
            direct: false,
        }
    }
}

/// How the ranks share IOR's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IorLayout {
    /// `-F`: each rank its own file.
    FilePerRank,
    /// One file, rank r's bytes in one piece (`-s 1`).
    SharedSegmented,
    /// One file, the ranks' transfers interleaved (`-b` equal to `-t`).
    SharedStrided,
}

/// IOR's run as fsbench runs it: the phases' Jobs and how the ranks share their file.
#[derive(Debug, Clone)]
pub struct IorPlan {
    /// The write phase (`-w`), then the read phase (`-r`), each `None` when not asked for.
    pub write: Option<Job>,
    pub read: Option<Job>,
    pub layout: IorLayout,
    /// `-C` on several ranks: the read phase reads another rank's data.
    pub reorder: bool,
    /// `-D` on several ranks: every rank stops this many seconds after the phase started.
    pub stonewall_s: Option<u64>,
    /// What the mapping changed or left out, for the Results' notes.
    pub notes: Vec<String>,
}

/// The flags of IOR that take a value.
pub(crate) const WITH_VALUE: &str = "abtsoiDdQlOGjJXTUfMN";
/// IOR's flags fsbench does not support, each with why.
const REFUSED: &[(char, &str)] = &[
    ('R', "checks a read against the data IOR expects; fsbench checks data in the run that writes it: use -W"),
    ('E', "uses an existing file: fsbench writes only to files it created (a kept file is overwritten by the next write)"),
    ('c', "is collective MPI-IO; fsbench issues POSIX calls"),
    ('m', "is multiFile: one file per iteration is not supported"),
    ('n', "is noFill (HDF5) and has no meaning here"),
    ('x', "is singleXferAttempt: fsbench retries nothing and reports every short transfer"),
    ('Z', "reorders tasks randomly: fsbench's -C shifts by a whole host"),
    ('X', "seeds random task reordering (-Z), which is not supported"),
    ('u', "is uniqueDir: fsbench keeps each rank's file in a directory of its own with -F already"),
    ('V', "is useFileView (MPI-IO) and has no meaning here"),
    ('q', "is quitOnError: fsbench stops every run at its first error"),
    ('H', "shows MPI-IO hints, which have no meaning here"),
    ('l', "sets IOR's data pattern: fsbench writes its own incompressible data"),
    ('O', "takes IOR's key=value options, which fsbench does not map"),
    ('G', "sets IOR's timestamp signature, part of its data pattern"),
    ('j', "is the outlier threshold: fsbench reports every rank in ranks[] instead"),
    ('J', "sets HDF5 alignment and has no meaning here"),
    ('T', "is a maximum time in minutes: use -D (seconds per phase)"),
    ('U', "is an MPI-IO hints file and has no meaning here"),
    ('f', "reads an IOR script: give the flags on the command line"),
    ('M', "hogs node memory, which fsbench does not do"),
    ('N', "sets the number of tasks: start fsbench with mpirun -np N"),
    ('y', "is dualMount and has no meaning here"),
    ('I', "is not an IOR option fsbench knows"),
];

/// A size: digits, optionally followed by k, m, g or t (powers of 1024, as IOR's sizes).
fn size(flag: char, v: &str) -> Result<u64, UsageError> {
    let bad = || usage!("-{flag} '{v}': expected a whole number, optionally with k, m, g or t");
    let (digits, shift) = match v.char_indices().last() {
        Some((i, c)) => match c.to_ascii_lowercase() {
            'k' => (&v[..i], 10),
            'm' => (&v[..i], 20),
            'g' => (&v[..i], 30),
            't' => (&v[..i], 40),
            _ => (v, 0),
        },
        None => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(bad)
}

/// A count: a whole number (no unit).
fn count(flag: char, v: &str) -> Result<u64, UsageError> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(usage!("-{flag} '{v}': expected a whole number"));
    }
    v.parse::<u64>()
        .map_err(|_| usage!("-{flag} '{v}': expected a whole number"))
}

/// Apply one short flag (with its value when it takes one).
pub(crate) fn short(o: &mut IorOptions, c: char, v: Option<&str>) -> Result<(), UsageError> {
    let val = || v.unwrap_or_default();
    match c {
        'a' => o.engine = api(val())?,
        'b' => o.block = size(c, val())?,
        't' => o.transfer = size(c, val())?,
        's' => o.segments = count(c, val())?,
        'o' => {
            if val().is_empty() {
                return Err(usage!("-o needs a file path"));
            }
            o.path = PathBuf::from(val());
        }
        'i' => {
            o.iterations = u32::try_from(count(c, val())?)
                .ok()
                .filter(|&n| (1..=10_000).contains(&n))
                .ok_or_else(|| usage!("-i {}: expected 1 to 10000 iterations", val()))?;
        }
        'D' => o.deadline_s = Some(count(c, val())?).filter(|&s| s > 0),
        'd' => {
            o.delay_s = count(c, val())?;
            if o.delay_s > 86_400 {
                return Err(usage!("-d {}: at most 86400 seconds", val()));
            }
        }
        'Q' => {
            if count(c, val())? != 1 {
                return Err(usage!(
                    "-Q {}: fsbench's -C reads the data of the ranks one host away (IOR's -Q 1); other offsets are not supported",
                    val()
                ));
            }
        }
        'F' => o.file_per_proc = true,
        'C' => o.reorder = true,
        'e' => o.fsync = true,
        'Y' => o.fsync_per_write = true,
        'g' => o.barriers = true,
        'w' => o.write = true,
        'r' => o.read = true,
        'W' => o.check_write = true,
        'z' => o.random = true,
        'k' => o.keep = true,
        'B' => o.direct = true,
        'v' => {}
        c => {
            return Err(match REFUSED.iter().find(|(f, _)| *f == c) {
                Some((_, why)) => usage!("-{c} {why}; fsbench ior does not support it"),
                None => usage!(
                    "unknown option -{}: see fsbench ior --help",
                    c.escape_default()
                ),
            })
        }
    }
    Ok(())
}

/// `-a`: IOR's POSIX and MMAP, or an fsbench engine by name.
fn api(v: &str) -> Result<EngineKind, UsageError> {
    match v.to_ascii_lowercase().as_str() {
        "posix" => Ok(EngineKind::Sync),
        "mmap" => Ok(EngineKind::Mmap),
        e @ ("sync" | "psync" | "uring" | "io_uring" | "null") => EngineKind::parse(e),
        _ => Err(usage!(
            "-a {v}: fsbench ior issues POSIX calls: POSIX, MMAP, or an fsbench engine (sync, uring, null)"
        )),
    }
}

/// Parse IOR's short flags (grouped `-wrk`, values joined `-b4m` or apart `-b 4m`); a word
/// `parse_extra` takes (fsbench's own long options) is left to it: it returns how many words
/// it used, 0 for a word it does not know.
pub fn parse(
    args: &[String],
    mut parse_extra: impl FnMut(&[String]) -> Result<usize, UsageError>,
) -> Result<IorOptions, UsageError> {
    let mut o = IorOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with("--") {
            match parse_extra(&args[i..])? {
                0 => {
                    return Err(usage!(
                        "unknown option {}: IOR's long options are not supported (see fsbench ior --help)",
                        a.escape_default()
                    ))
                }
                n => i += n,
            }
            continue;
        }
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(usage!(
                "unexpected argument '{}': IOR takes options only (the file is -o PATH)",
                a.escape_default()
            ));
        };
        for (at, c) in flags.char_indices() {
            if WITH_VALUE.contains(c) {
                let rest = &flags[at + c.len_utf8()..];
                let v = if rest.is_empty() {
                    i += 1;
                    args.get(i)
                        .map(String::as_str)
                        .ok_or_else(|| usage!("-{c} needs a value: see fsbench ior --help"))?
                } else {
                    rest
                };
                short(&mut o, c, Some(v))?;
                break;
            }
            short(&mut o, c, None)?;
        }
        i += 1;
    }
    if !o.write && !o.read {
        o.write = true;
        o.read = true;
    }
    Ok(o)
}

/// The Jobs and layout of IOR's run on `ranks` ranks: the one function that turns IOR's
/// options into fsbench's (also for io500's ior-easy and ior-hard).
pub fn map(o: &IorOptions, ranks: u32) -> Result<IorPlan, UsageError> {
    let ranks = ranks.max(1);
    if o.transfer == 0 || o.block == 0 || o.segments == 0 {
        return Err(usage!(
            "-b, -t and -s must be more than 0 (-b {} -t {} -s {})",
            o.block,
            o.transfer,
            o.segments
        ));
    }
    if !o.block.is_multiple_of(o.transfer) {
        return Err(usage!(
            "-t {} must divide -b {} (each block is whole transfers, as in IOR)",
            o.transfer,
            o.block
        ));
    }
    let per_rank = o
        .block
        .checked_mul(o.segments)
        .filter(|b| b.checked_mul(ranks as u64).is_some())
        .ok_or_else(|| usage!("-b {} x -s {} is too large", o.block, o.segments))?;
    if o.check_write && !o.write {
        return Err(usage!("-W checks the data the write phase wrote: add -w"));
    }
    let layout = if o.file_per_proc {
        IorLayout::FilePerRank
    } else if o.segments == 1 {
        IorLayout::SharedSegmented
    } else if o.block == o.transfer {
        IorLayout::SharedStrided
    } else if ranks == 1 {
        // One rank's segments follow each other: one sequential pass over b x s bytes.
        IorLayout::SharedSegmented
    } else {
        return Err(usage!(
            "a shared file with -s {} segments of -b {} in -t {} transfers on {ranks} ranks: fsbench's shared layouts are one piece per rank (-s 1) or interleaved transfers (-b equal to -t); use one of those, or -F",
            o.segments,
            o.block,
            o.transfer
        ));
    };
    if o.engine == EngineKind::Mmap && ranks > 1 && layout != IorLayout::FilePerRank {
        return Err(usage!(
            "-a MMAP maps the whole file, and the ranks share one: add -F (a file per rank), or use -a POSIX on a shared file"
        ));
    }
    let mut notes = Vec::new();
    if o.barriers {
        notes.push(
            "-g: every phase starts at one barrier of the ranks and ends at one meeting of them; fsbench has no separate barriers around open and close"
                .to_string(),
        );
    }
    if o.reorder && ranks == 1 {
        notes.push("-C on one rank: there is no other rank's data to read".to_string());
    }
    let file_size = match layout {
        IorLayout::FilePerRank => per_rank,
        _ => per_rank * ranks as u64,
    };
    let job = |access: Access, name: &str| {
        let mut j = Job {
            name: name.to_string(),
            targets: vec![o.path.clone()],
            threads: 1,
            access,
            block_size: o.transfer,
            file_size: Some(file_size),
            engine: o.engine,
            cache: if o.direct {
                CachePolicy::Direct
            } else {
                CachePolicy::Buffered
            },
            random_map: o.random,
            keep: true,
            ..Default::default()
        };
        // On one host the deadline is the phase's time limit; each transfer is done once.
        if ranks == 1 {
            if let Some(d) = o.deadline_s {
                j.time_s = Some(d as f64);
                j.io_count = Some(per_rank / o.transfer);
            }
        }
        j
    };
    let write = o.write.then(|| {
        let mut j = job(
            if o.random {
                Access::RandWrite
            } else {
                Access::Write
            },
            "ior write",
        );
        // -Y syncs after every write, the last one too: a sync before each next write
        // (fsync_every) and one at the end.
        j.fsync = o.fsync || o.fsync_per_write;
        j.fsync_every = o.fsync_per_write.then_some(1);
        j.verify = o.check_write;
        j
    });
    let read = o.read.then(|| {
        job(
            if o.random {
                Access::RandRead
            } else {
                Access::Read
            },
            "ior read",
        )
    });
    Ok(IorPlan {
        write,
        read,
        layout,
        reorder: o.reorder && ranks > 1,
        stonewall_s: o.deadline_s.filter(|_| ranks > 1),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<IorOptions, UsageError> {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&v, |_| Ok(0))
    }

    #[test]
    fn ior_command_lines_parse_and_map() {
        let o = p("-w -r -b 4m -t64k -s 2 -o /x/f -k -i 3 -e -z -B -a MMAP").unwrap();
        assert_eq!((o.block, o.transfer, o.segments), (4 << 20, 64 << 10, 2));
        assert!(o.write && o.read && o.keep && o.fsync && o.random && o.direct);
        assert_eq!((o.iterations, o.engine), (3, EngineKind::Mmap));
        assert_eq!(o.path, PathBuf::from("/x/f"));
        // Neither -w nor -r: both, as in IOR.
        let o = p("-b 1m").unwrap();
        assert!(o.write && o.read);
        let plan = map(&p("-b 4m -t 64k -s 2 -w").unwrap(), 1).unwrap();
        let w = plan.write.unwrap();
        assert_eq!((w.file_size, w.block_size), (Some(8 << 20), 64 << 10));
        assert!(plan.read.is_none());
        // On ranks: the shared file is every rank's b x s.
        let plan = map(&p("-b 1m -t 64k -s 1").unwrap(), 4).unwrap();
        assert_eq!(plan.layout, IorLayout::SharedSegmented);
        assert_eq!(plan.read.unwrap().file_size, Some(4 << 20));
        let plan = map(&p("-b 64k -t 64k -s 8").unwrap(), 4).unwrap();
        assert_eq!(plan.layout, IorLayout::SharedStrided);
        assert_eq!(plan.write.unwrap().file_size, Some(4 * 8 * 65536));
        let plan = map(&p("-F -b 1m -t 64k -s 3 -D 5").unwrap(), 4).unwrap();
        assert_eq!(plan.layout, IorLayout::FilePerRank);
        assert_eq!(plan.stonewall_s, Some(5));
        assert_eq!(plan.write.unwrap().file_size, Some(3 << 20));
    }

    #[test]
    fn bad_flags_are_one_line_refusals() {
        for (s, want) in [
            ("-b", "needs a value"),
            ("-b 4x", "whole number"),
            ("-q", "quitOnError"),
            ("-R", "use -W"),
            ("-a MPIIO", "POSIX calls"),
            ("-Q 2", "-Q 2"),
            ("--posix.odirect", "long options"),
            ("somefile", "unexpected argument"),
            ("-%", "unknown option"),
        ] {
            let e = p(s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
            assert_eq!(e.lines().count(), 1, "{s}: {e}");
        }
        for (s, want) in [
            ("-b 1m -t 3k", "must divide"),
            ("-r -W", "add -w"),
            ("-b 1m -t 64k -s 2", "shared layouts"),
            ("-b 0", "more than 0"),
            ("-a MMAP", "add -F"),
        ] {
            let e = map(&p(s).unwrap(), 4).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    fn word() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let flags = proptest::sample::select(vec![
            "-w",
            "-r",
            "-b",
            "-t",
            "-s",
            "-F",
            "-C",
            "-Q",
            "-e",
            "-g",
            "-W",
            "-R",
            "-z",
            "-k",
            "-o",
            "-i",
            "-D",
            "-d",
            "-B",
            "-Y",
            "-a",
            "-wrk",
            "-b4m",
            "-t0",
            "-",
            "--",
            "0",
            "18446744073709551616",
            "16t",
            "4g",
            "POSIX",
            "--format",
        ])
        .prop_map(String::from);
        prop_oneof![flags, ".{0,12}"]
    }

    proptest::proptest! {
        /// Any argv, of IOR's flags, values and noise, is parsed or refused: never a panic.
        #[test]
        fn random_argv_never_panics(words in proptest::collection::vec(word(), 0..12),
                                    ranks in 1u32..9) {
            if let Ok(o) = parse(&words, |_| Ok(0)) {
                let _ = map(&o, ranks);
            }
        }
    }
}
