//! Fuzz/property test of the whole command line: every subcommand's arguments and every input
//! file kind (TOML job files, WML .f files, CSV and binary traces, Result JSON, suite TOMLs)
//! driven with random input — tokens from a vocabulary of real flags (read from each
//! subcommand's `--help`) and values, random bytes, and mutations of valid inputs — under a
//! memory limit and a time limit. Every case must end by itself within the time limit with
//! status 0, 1, 2 or 130, never by a signal (an abort); status 2 must be exactly one line on
//! stderr; nothing may panic; and a file fsbench did not create must come out unchanged.
//!
//! Safety of the fuzzer itself: each case runs in a fresh temporary directory (also its
//! TMPDIR), names only relative paths inside it (never an absolute path, never /dev, never
//! `--force`, never a real PID), keeps sizes and times in generated values small (caps such
//! as `--time 0.1s` are appended where a run would start), and runs under RLIMIT_AS,
//! RLIMIT_FSIZE (with SIGXFSZ ignored, so a too-large write is an error, not a kill) and
//! RLIMIT_CORE 0, in its own process group that is killed on a timeout.
//!
//! Seeded and reproducible: FSBENCH_FUZZ_SEED (default fixed), FSBENCH_FUZZ_CASES (default
//! sized for a 2-core CI machine), FSBENCH_FUZZ_CASE=N runs case N alone and keeps its
//! directory. A failure prints the seed, the case number and the command line.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const DEFAULT_SEED: u64 = 0x5eed_f5b0_2026;
const DEFAULT_CASES: usize = 500;
const CASE_TIMEOUT: Duration = Duration::from_secs(20);
/// Address space per case: real runs (io_uring rings, a few threads) fit well inside.
const AS_LIMIT: u64 = 4 << 30;
/// Largest file a case may write.
const FSIZE_LIMIT: u64 = 256 << 20;

/// splitmix64: small, seedable, good enough to pick tokens.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
    fn pick<'a>(&mut self, v: &'a [&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
}

const SUBCOMMANDS: &[&str] = &[
    "quick", "run", "sweep", "suite", "report", "compare", "vx", "advise", "iostat", "trace",
    "replay", "frag", "workload",
];

// Value pools: small valid values (a run they start is brief) and invalid ones.
const SIZES: &[&str] = &[
    "4k",
    "64k",
    "1m",
    "512",
    "2k",
    "0",
    "-1",
    "abc",
    "1.5k",
    "99999999999999999999",
    "8e",
    "4x",
    "",
    "1:3",
    "0x10",
    " 4k",
];
const TIMES: &[&str] = &[
    "0.1s",
    "200ms",
    "0",
    "-1",
    "abc",
    "1e99s",
    "99999999999999999999s",
    "",
    "0.2",
    "5x",
    "0.1 s",
];
const BIG_NUMS: &[&str] = &[
    "1",
    "2",
    "4",
    "0",
    "-1",
    "abc",
    "4294967296",
    "18446744073709551616",
    "5000",
    "65536",
    "1.5",
];
const SMALL_NUMS: &[&str] = &[
    "1",
    "2",
    "3",
    "0",
    "-1",
    "abc",
    "18446744073709551616",
    "1.5",
    "",
];
const SPEEDS: &[&str] = &["1", "2.5", "1000", "0", "-1", "abc", "inf", "NaN", ""];
const SCALES: &[&str] = &["0.01", "0.05", "0", "-1", "abc", "NaN", "inf"];
const PIDS: &[&str] = &["0", "999999999", "abc", "-1", "4294967295"];
const PATHS: &[&str] = &[
    "out.json",
    "out.csv",
    "out.html",
    "sub",
    "data.dat",
    "missing/x.json",
    "t.csv",
    "",
    "sub/o.json",
    "link",
    "fifo",
];
const INPUTS: &[&str] = &[
    "job.toml", "w.f", "t.csv", "t.bin", "r1.json", "r2.json", "fz.toml", "data.dat", "sub",
    "missing", "", ".", "link", "fifo", "bad.toml",
];
const WORDS: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "randrw",
    "sync",
    "uring",
    "mmap",
    "buffered",
    "direct",
    "discovered",
    "json",
    "csv",
    "text",
    "md",
    "html",
    "bin",
    "64k:5",
    "size=4k,8k",
    "bs=4k",
    "threads=1,2",
    "bs",
    "size",
    "thread",
    "total",
    "normal",
    "sequential",
    "random",
    "kb_per_s",
    "iops",
    "foo",
    "",
    "-",
    "--",
    "=",
    "read,write",
    "1:4294967295",
    "all",
    "append",
    "none",
];
const NEVER: &[&str] = &["--force", "--drop-cache", "--help", "-h", "--version", "-V"];

/// A subcommand's flags as its `--help` lists them: (flag, value placeholder).
type Flags = Vec<(String, Option<String>)>;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

fn flags_of(sub: &str) -> Flags {
    if sub == "vx" {
        // vxbench's own option letters (parsed by fsbench vx, not clap).
        return [
            ("-w", Some("W")),
            ("-i", Some("SUBOPTS")),
            ("-o", Some("OPEN")),
            ("-c", Some("CACHE")),
            ("-e", Some("SIZE")),
            ("-r", Some("SIZE")),
            ("-f", Some("FLAGS")),
            ("-P", None),
            ("-p", None),
            ("-t", None),
            ("-m", None),
            ("-s", None),
            ("-v", None),
            ("-k", None),
            ("-M", None),
            ("--engine", Some("ENGINE")),
            ("--qd", Some("QD")),
            ("--time", Some("TIME")),
            ("--rate-iops", Some("COUNT")),
            ("--seed", Some("COUNT")),
            ("--output", Some("OUTPUT")),
            ("--format", Some("FMT")),
            ("--keep", None),
        ]
        .iter()
        .map(|(f, v)| (f.to_string(), v.map(str::to_string)))
        .collect();
    }
    let out = Command::new(bin())
        .args([sub, "--help"])
        .output()
        .expect("fsbench runs");
    assert!(out.status.success(), "{sub} --help failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut flags = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        if !l.starts_with('-') {
            continue;
        }
        // "-o, --output <OUTPUT>  text" or "--keep  text"
        let spec = l.split("  ").next().unwrap_or("");
        let mut flag = None;
        let mut value = None;
        for w in spec.split([' ', ',']) {
            if w.starts_with("--") {
                flag = Some(w.to_string());
            } else if w.starts_with('<') {
                value = Some(w.trim_matches(['<', '>', '.']).to_string());
            }
        }
        if let Some(f) = flag {
            if !NEVER.contains(&f.as_str()) {
                flags.push((f, value));
            }
        }
    }
    flags
}

fn value_for(rng: &mut Rng, flag: &str, placeholder: &str) -> String {
    let pool: &[&str] = match (flag, placeholder) {
        ("--pid" | "-p", _) => PIDS,
        ("--speed", _) => SPEEDS,
        ("--scale", _) => SCALES,
        ("-w", _) => &[
            "read",
            "write",
            "rand_read",
            "rand_write",
            "rand_mixed",
            "mmap_read",
            "bogus",
            "",
        ],
        ("-i", _) => &[
            "iosize=4k,iocount=16",
            "nthreads=2,iocount=8",
            "iosize=abc",
            "maxfilesize=64",
            "iocount=4,fsync,remove",
            "rdpct=50,iocount=8",
            "nrep=2,iocount=4",
            "truncup=64",
            "reserveonly",
            "iocount=18446744073709551616",
            "nthreads=0",
            "=,",
        ],
        ("-o", _) if placeholder == "OPEN" => &["append", "sync", "dsync", "trunc", "bogus"],
        ("-c", _) => &[
            "direct",
            "dsync",
            "discovered",
            "discovered=64k",
            "concurrent",
            "bogus",
        ],
        ("-f", _) => &["align", "contig", "noextend", "bogus"],
        ("--axis", _) => &[
            "bs=4k,8k",
            "size=4k",
            "threads=1,2",
            "bogus=1",
            "bs=",
            "=",
            "bs=abc",
        ],
        ("--study", _) => &["a", "nosuch", ""],
        ("--stripe", _) => &[
            "64k:5",
            "1:4294967295",
            "0:1",
            "4k:0",
            "abc",
            "1:1",
            "4k:3",
            ":",
        ],
        ("--list", _) => &["0", "5", "1000000", "abc", "-1"],
        ("--trace-records", _) => &["1", "64k", "1m", "1t", "0", "abc", "18446744073709551616"],
        (_, "SIZE" | "BS" | "EXTSIZE" | "RESERVE" | "MEASURE_SIZE" | "RATE_BYTES" | "REGION") => {
            SIZES
        }
        (_, "TIME" | "INTERVAL" | "DURATION" | "MEASURE_TIME" | "STALL_AFTER") => TIMES,
        (_, "THREADS" | "QD") => BIG_NUMS,
        (
            _,
            "COUNT" | "NREP" | "SEED" | "PROCESSES" | "RWMIX_READ" | "RWMIX" | "RATE_IOPS"
            | "REPEAT" | "FILES" | "N" | "TOP" | "MEASURE_REPEAT" | "ROWS" | "COLS",
        ) => SMALL_NUMS,
        (_, "OUTPUT" | "FILE" | "DIR" | "DIRS" | "TRACE") => PATHS,
        (_, "BASELINE") => INPUTS,
        _ => WORDS,
    };
    if rng.chance(10) {
        random_text(rng)
    } else {
        rng.pick(pool).to_string()
    }
}

fn random_text(rng: &mut Rng) -> String {
    let n = rng.below(12);
    (0..n)
        .map(|_| {
            let c = rng.pick(&[
                "a", "9", "-", ".", ":", ",", "=", "k", "m", "s", " ", "%", "é", "\t", "0", "x",
            ]);
            c.to_string()
        })
        .collect()
}

/// Random bytes as one argument (no NUL: the OS cannot pass one).
fn random_bytes(rng: &mut Rng) -> OsString {
    let n = 1 + rng.below(10);
    let v: Vec<u8> = (0..n).map(|_| (rng.below(255) + 1) as u8).collect();
    // Never a path out of the sandbox.
    let v: Vec<u8> = v
        .into_iter()
        .map(|b| if b == b'/' { b'_' } else { b })
        .collect();
    OsString::from_vec(v)
}

/// The positional arguments of a subcommand, mostly well-formed.
fn positionals(rng: &mut Rng, sub: &str) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match sub {
        "quick" => {
            s(&[rng.pick(&[".", "sub", "missing", "data.dat", "fifo"])])[..rng.below(2)].to_vec()
        }
        "run" => (0..rng.below(3))
            .map(|_| {
                rng.pick(&[
                    "f.dat",
                    "job.toml",
                    "data.dat",
                    "sub",
                    "bad.toml",
                    "missing.toml",
                    "g.dat",
                    "w.f",
                    "fifo",
                    "link",
                ])
                .to_string()
            })
            .collect(),
        "sweep" => s(&[rng.pick(&["f.dat", "sub", "data.dat", "missing/x", "fifo"])]),
        "suite" => s(&[rng.pick(&[
            "list",
            "fz.toml",
            "nosuch",
            "job.toml",
            "",
            "sub",
            "missing.toml",
        ])]),
        "report" => (0..1 + rng.below(3))
            .map(|_| rng.pick(INPUTS).to_string())
            .collect(),
        "compare" => (0..rng.below(4))
            .map(|_| rng.pick(INPUTS).to_string())
            .collect(),
        "vx" => s(&[rng.pick(&["f.dat", "data.dat", "sub", "g.dat", "fifo"])]),
        "advise" => s(&[rng.pick(&[".", "data.dat", "sub", "missing", "fifo"])]),
        "iostat" => {
            let mut v = Vec::new();
            if rng.chance(40) {
                v.push(rng.pick(&[".", "sub", "data.dat", "missing"]).to_string());
            }
            v.push(
                rng.pick(&["0.1s", "100ms", "0", "-1", "abc", "10ms", "1ms", "0.05"])
                    .to_string(),
            );
            // A count always: without one iostat samples until interrupted (by design).
            v.push(
                rng.pick(&["1", "2", "0", "-1", "abc", "18446744073709551616"])
                    .to_string(),
            );
            v
        }
        "trace" => Vec::new(),
        "replay" => s(&[rng.pick(&[
            "t.csv", "t.bin", "r1.json", "missing", "sub", "job.toml", "fifo", "data.dat",
        ])]),
        "frag" => s(&[rng.pick(&[".", "data.dat", "sub", "missing", "t.csv", "fifo"])]),
        "workload" => {
            let mut v = s(&[rng.pick(&[
                "w.f",
                "list",
                "show",
                "missing.f",
                "job.toml",
                "nosuch",
                "t.csv",
            ])]);
            if v[0] == "show" || rng.chance(10) {
                v.push(rng.pick(&["createfiles", "nosuch", "w.f", ""]).to_string());
            }
            v
        }
        _ => Vec::new(),
    }
}

/// Flags that bound a run, appended when the case does not give them itself (the pools
/// hold only small or invalid values, so a given one is also brief).
fn caps(sub: &str) -> &'static [(&'static str, &'static str)] {
    match sub {
        "quick" => &[
            ("--time", "0.1s"),
            ("--size", "4m"),
            ("--warmup", "0"),
            ("--repeat", "1"),
        ],
        "run" => &[("--time", "0.2s"), ("--size", "1m")],
        "sweep" => &[("--time", "0.1s"), ("--size", "64k")],
        "suite" => &[("--scale", "0.01"), ("--dir", "sub")],
        "vx" => &[("--time", "0.2s")],
        "advise" => &[("--measure-time", "0.1s"), ("--measure-size", "1m")],
        "workload" => &[("--time", "0.2s")],
        "trace" => &[("--duration", "1s")],
        _ => &[],
    }
}

/// A case: the arguments and which input files are mutated.
struct Case {
    args: Vec<OsString>,
    mutate: Vec<&'static str>,
    mutations: u64,
}

fn make_case(rng: &mut Rng, sub: &str, flags: &Flags) -> Case {
    let mut args: Vec<OsString> = vec![sub.into()];
    let raw = rng.chance(12);
    let mut given: Vec<String> = Vec::new();
    if raw {
        // Random tokens: real flags and values in any order, and random bytes.
        for _ in 0..rng.below(7) {
            let t: OsString = match rng.below(5) {
                0 => random_bytes(rng),
                1 => rng.pick(WORDS).into(),
                2 => rng.pick(INPUTS).into(),
                _ if !flags.is_empty() => {
                    let f = &flags[rng.below(flags.len())].0;
                    given.push(f.clone());
                    f.into()
                }
                _ => random_text(rng).into(),
            };
            args.push(t);
        }
    } else {
        let pos = positionals(rng, sub);
        let mut opts: Vec<Vec<String>> = Vec::new();
        if sub == "trace" && rng.chance(50) {
            opts.push(vec![
                "--analyze".into(),
                rng.pick(&[
                    "t.csv", "t.bin", "r1.json", "missing", "sub", "fifo", "big.csv",
                ])
                .into(),
            ]);
        }
        for _ in 0..rng.below(5) {
            if flags.is_empty() {
                break;
            }
            let (f, v) = &flags[rng.below(flags.len())];
            given.push(f.clone());
            let mut o = vec![f.clone()];
            if let Some(v) = v {
                if !rng.chance(5) {
                    o.push(value_for(rng, f, v));
                }
            }
            opts.push(o);
        }
        // Options and positionals interleaved as a user might.
        let mut items: Vec<Vec<String>> = pos.into_iter().map(|p| vec![p]).collect();
        for o in opts {
            let at = rng.below(items.len() + 1);
            items.insert(at, o);
        }
        for it in items {
            args.extend(it.into_iter().map(OsString::from));
        }
        if sub == "trace" && rng.chance(50) {
            args.push("--".into());
            let cmd: &[&str] = match rng.below(6) {
                0 => &["true"],
                1 => &["sleep", "0.1"],
                2 => &["cat", "t.csv"],
                3 => &["nonexistent-command-xyz"],
                4 => &["sh", "-c", "exit 3"],
                _ => &["dd", "if=t.csv", "of=dd.out", "bs=1k", "status=none"],
            };
            args.extend(cmd.iter().map(OsString::from));
        }
        if rng.chance(8) {
            // A mutation of the argument list itself.
            let i = 1 + rng.below(args.len());
            match rng.below(3) {
                0 if i < args.len() => {
                    args.remove(i);
                }
                1 => args.insert(i.min(args.len()), random_bytes(rng)),
                _ => {
                    let d = args[rng.below(args.len())].clone();
                    args.insert(i.min(args.len()), d);
                }
            }
        }
    }
    // Caps go before a `--` (after it, they would be the traced command's).
    let dashdash = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut tail = args.split_off(dashdash);
    for (f, v) in caps(sub) {
        let has = args.iter().any(|a| a == *f) || given.iter().any(|g| g == f);
        // --duration goes with --pid only; an accepted trace --pid is refused anyway.
        if !(has || sub == "trace" && *f == "--duration") {
            args.push(f.into());
            args.push(v.into());
        }
    }
    args.append(&mut tail);
    let mut mutate = Vec::new();
    if rng.chance(45) {
        for f in [
            "job.toml", "w.f", "t.csv", "t.bin", "r1.json", "r2.json", "fz.toml",
        ] {
            if rng.chance(35) {
                mutate.push(f);
            }
        }
    }
    Case {
        args,
        mutate,
        mutations: 1 + rng.next() % 4,
    }
}

/// The inputs every case starts with (valid files of every kind), before mutation.
struct Inputs {
    files: Vec<(&'static str, Vec<u8>)>,
}

const DATA: &[u8] = b"precious data fsbench did not create\n";

fn inputs(result_json: &[u8]) -> Inputs {
    let trace_csv = "id,thread,op,file,offset,len,start_ns,end_ns,result\n\
        0,1,open,/d/a,0,0,0,1000,3\n\
        1,1,read,/d/a,0,4096,2000,5000,4096\n\
        2,2,write,/d/b,8192,4096,3000,9000,4096\n\
        3,1,fsync,/d/a,0,0,9000,12000,0\n\
        4,2,read,\"/d/c,x\",4096,512,9500,9800,512\n\
        5,1,close,/d/a,0,0,13000,13100,0\n";
    let t = fsbench::trace::format::parse_csv(trace_csv, "fixture").expect("fixture parses");
    let mut bin = Vec::new();
    fsbench::trace::format::to_bin(&t, &mut bin).unwrap();
    let job = "name = \"fz\"\ntargets = [\"a.dat\"]\naccess = \"randrw\"\nread_pct = 70\nblock_size = 4096\nio_count = 64\nthreads = 2\nsize = 65536\n";
    let wml = "set $dir=.\ndefine file name=f,path=$dir,size=64k,prealloc\ndefine process name=p,instances=1 { thread name=t { flowop read name=r,filename=f,iosize=4k,random } }\nrun 1\n";
    let suite = "name = \"fz\"\ntitle = \"t\"\nsource = \"s\"\n[[study]]\nid = \"a\"\ntitle = \"b\"\nsettings = [\"rw=read\", \"bs=4k\", \"time=0.1s\"]\ntable = { rows = [\"size\"], metrics = [\"kb_per_s\"] }\n[[study.axis]]\nname = \"size\"\nvalues = [\"16k\", \"32k\"]\n";
    let big = "id,thread,op,file,offset,len,start_ns,end_ns,result\n0,0,read,f,0,1073741824,0,1,1073741824\n";
    Inputs {
        files: vec![
            ("job.toml", job.as_bytes().to_vec()),
            ("bad.toml", b"targets = [\"a\"]\nblok_size = 4\n".to_vec()),
            ("w.f", wml.as_bytes().to_vec()),
            ("t.csv", trace_csv.as_bytes().to_vec()),
            ("t.bin", bin),
            ("big.csv", big.as_bytes().to_vec()),
            ("r1.json", result_json.to_vec()),
            ("r2.json", result_json.to_vec()),
            ("fz.toml", suite.as_bytes().to_vec()),
            ("data.dat", DATA.to_vec()),
        ],
    }
}

fn mutate(rng: &mut Rng, data: &mut Vec<u8>, n: u64) {
    for _ in 0..n {
        let len = data.len();
        match rng.below(7) {
            // Flip a byte.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] = (rng.below(256)) as u8;
            }
            // Insert a digit or a delimiter (numbers grow, fields split).
            1 => {
                let i = rng.below(len + 1);
                let b = rng
                    .pick(&["9", "0", ",", "\n", "\"", "-", "{", "]", "=", "k"])
                    .as_bytes()[0];
                data.insert(i, b);
            }
            // Delete a range.
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(16)).min(len);
                data.drain(i..j);
            }
            // Truncate.
            3 => {
                let i = rng.below(len + 1);
                data.truncate(i);
            }
            // Duplicate a line.
            4 if len > 0 => {
                let i = rng.below(len);
                let start = data[..i]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map(|p| p + 1)
                    .unwrap_or(0);
                let end = data[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map(|p| i + p + 1)
                    .unwrap_or(len);
                let line = data[start..end].to_vec();
                for (k, b) in line.into_iter().enumerate() {
                    data.insert(end + k, b);
                }
            }
            // A huge or odd number somewhere.
            5 => {
                let i = rng.below(len + 1);
                let s = rng.pick(&[
                    "18446744073709551615",
                    "4294967295",
                    "-1",
                    "1e308",
                    "NaN",
                    "99999999999999999999",
                ]);
                for (k, b) in s.bytes().enumerate() {
                    data.insert(i + k, b);
                }
            }
            _ => {
                let i = rng.below(len + 1);
                data.insert(i, (rng.below(256)) as u8);
            }
        }
    }
}

fn shell_quote(a: &OsString) -> String {
    let s = a.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:=/%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

struct Failure {
    case: usize,
    line: String,
    why: String,
    stderr: String,
}

fn setup_dir(dir: &Path, rng: &mut Rng, inp: &Inputs, case: &Case) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    for (name, data) in &inp.files {
        let mut d = data.clone();
        if case.mutate.contains(name) {
            mutate(rng, &mut d, case.mutations);
        }
        std::fs::write(dir.join(name), d).unwrap();
    }
    std::os::unix::fs::symlink("data.dat", dir.join("link")).unwrap();
    let fifo = std::ffi::CString::new(dir.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path inside the case directory.
    unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) };
}

/// Run one case; `None` when it behaved.
fn run_case(
    idx: usize,
    seed: u64,
    flags: &[(String, Flags)],
    inp: &Inputs,
    keep: bool,
) -> Option<Failure> {
    let mut rng = Rng(seed ^ (idx as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let (sub, fl) = &flags[rng.below(flags.len())];
    let case = make_case(&mut rng, sub, fl);
    let td = tempfile::Builder::new()
        .prefix("fsbench-fuzz-")
        .tempdir()
        .unwrap();
    let dir = td.path().to_path_buf();
    setup_dir(&dir, &mut rng, inp, &case);
    let line = format!(
        "(cd {} && fsbench {})",
        dir.display(),
        case.args
            .iter()
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let errf = std::fs::File::create(dir.join("tmp").join(".stderr")).unwrap();
    let mut cmd = Command::new(bin());
    cmd.current_dir(&dir)
        .args(&case.args)
        .env("TMPDIR", dir.join("tmp"))
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(errf)
        .process_group(0);
    // SAFETY: only setrlimit and signal in the child before exec (async-signal-safe).
    unsafe {
        cmd.pre_exec(|| {
            let lim = |r, v: u64| {
                let rl = libc::rlimit {
                    rlim_cur: v as libc::rlim_t,
                    rlim_max: v as libc::rlim_t,
                };
                libc::setrlimit(r, &rl);
            };
            lim(libc::RLIMIT_AS, AS_LIMIT);
            lim(libc::RLIMIT_FSIZE, FSIZE_LIMIT);
            lim(libc::RLIMIT_CORE, 0);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn fsbench");
    let pgid = child.id() as libc::pid_t;
    // Past the time limit the case gets a terminal's Ctrl-C (SIGINT to its group) and 3 s to
    // answer it. `iostat` and `trace` run until stopped by design (like `sar -d 1`, `strace
    // -p`): for them an answered Ctrl-C is the expected end; for everything else running past
    // the limit is a failure either way, and the report says whether Ctrl-C was answered.
    let open_ended = matches!(sub.as_str(), "iostat" | "trace");
    let mut interrupted_at = None;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        match interrupted_at {
            None if t0.elapsed() > CASE_TIMEOUT => {
                // SAFETY: signalling the process group this case started.
                unsafe { libc::kill(-pgid, libc::SIGINT) };
                interrupted_at = Some(Instant::now());
            }
            Some(t) if t.elapsed() > Duration::from_secs(3) => {
                // SAFETY: killing the process group this case started.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Whatever the case left running in its group goes.
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let stderr = std::fs::read_to_string(dir.join("tmp").join(".stderr")).unwrap_or_default();
    let mut why = Vec::new();
    match status {
        None => why.push(format!(
            "did not finish in {CASE_TIMEOUT:?} and ignored Ctrl-C for 3 s"
        )),
        Some(_) if interrupted_at.is_some() && !open_ended => why.push(format!(
            "did not finish in {CASE_TIMEOUT:?} (it did answer Ctrl-C)"
        )),
        Some(st) => {
            if let Some(sig) = st.signal() {
                why.push(format!("killed by signal {sig}"));
            } else {
                let code = st.code().unwrap_or(-1);
                if ![0, 1, 2, 130].contains(&code) {
                    why.push(format!("exit status {code}"));
                }
                if code == 2 && stderr.lines().count() != 1 {
                    why.push(format!(
                        "exit 2 with {} lines on stderr",
                        stderr.lines().count()
                    ));
                }
            }
        }
    }
    if stderr.contains("panicked") {
        why.push("panicked".into());
    }
    if std::fs::read(dir.join("data.dat")).ok().as_deref() != Some(DATA) {
        why.push("data.dat (not fsbench's) was changed or removed".into());
    }
    if keep {
        eprintln!("case {idx}: {line}\nstatus {status:?}\n{stderr}");
        let _ = td.keep();
    }
    if why.is_empty() {
        None
    } else {
        Some(Failure {
            case: idx,
            line,
            why: why.join("; "),
            stderr: stderr.lines().take(6).collect::<Vec<_>>().join("\n    "),
        })
    }
}

fn valid_result_json() -> Vec<u8> {
    let td = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .current_dir(td.path())
        .args([
            "run", "--rw", "randrw", "--bs", "4k", "--size", "64k", "--count", "16", "f.dat",
            "--output", "r.json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(td.path().join("r.json")).unwrap()
}

#[test]
fn every_subcommand_survives_random_input() {
    let seed = std::env::var("FSBENCH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let cases = std::env::var("FSBENCH_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let only: Option<usize> = std::env::var("FSBENCH_FUZZ_CASE")
        .ok()
        .and_then(|s| s.parse().ok());
    let flags: Vec<(String, Flags)> = SUBCOMMANDS
        .iter()
        .map(|s| (s.to_string(), flags_of(s)))
        .collect();
    let inp = inputs(&valid_result_json());
    eprintln!("fuzz: seed {seed}, {cases} cases (FSBENCH_FUZZ_SEED / FSBENCH_FUZZ_CASES / FSBENCH_FUZZ_CASE)");
    if let Some(i) = only {
        let f = run_case(i, seed, &flags, &inp, true);
        if let Some(f) = f {
            panic!("case {i}: {}: {}\n    {}", f.why, f.line, f.stderr);
        }
        return;
    }
    let t0 = Instant::now();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= cases {
                    break;
                }
                if let Some(f) = run_case(i, seed, &flags, &inp, false) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by_key(|f| f.case);
    eprintln!("fuzz: {cases} cases in {:.1} s", t0.elapsed().as_secs_f64());
    if !failures.is_empty() {
        let mut msg = format!(
            "{} of {cases} fuzz cases failed (seed {seed}):\n",
            failures.len()
        );
        for f in &failures {
            msg.push_str(&format!(
                "case {} [{}]: {}\n    {}\n    reproduce: FSBENCH_FUZZ_SEED={seed} FSBENCH_FUZZ_CASE={} cargo test --release --test fuzz_cli\n",
                f.case, f.why, f.line, f.stderr, f.case
            ));
        }
        panic!("{msg}");
    }
}
