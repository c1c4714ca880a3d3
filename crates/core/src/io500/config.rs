//! IO500's INI-style configuration file, the part of it that applies to a run on one host:
//! `[section]` headers, `key = value` lines, `#` and `;` comments. Keys IO500 has and
//! fsbench does not support, and keys nobody has, are refused by name in one line; every
//! size and count is bounded before anything is allocated or created.

use crate::error::UsageError;
use crate::usage;
use std::path::PathBuf;

/// IO500's fixed transfer size of ior-hard (bytes).
pub(crate) const IOR_HARD_TRANSFER: u64 = 47_008;
/// IO500's bytes per file of mdtest-hard.
pub(crate) const MDTEST_HARD_BYTES: u64 = 3_901;
/// The stonewall an official IO500 run needs (seconds).
pub(crate) const OFFICIAL_STONEWALL_S: u64 = 300;
/// Longest stonewall accepted (a day).
const MAX_STONEWALL_S: u64 = 86_400;
/// Largest ior-easy block per process accepted (IO500's default is 9,920,000 MiB).
const MAX_BLOCK: u64 = 1 << 50;
/// Most ior-hard segments accepted (IO500's default is 10,000,000).
const MAX_SEGMENTS: u64 = 1 << 34;
/// Largest configuration file read.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// What the run does: IO500's defaults, changed by the configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[global] datadir`.
    pub datadir: Option<PathBuf>,
    /// `[debug] stonewall-time`, seconds.
    pub stonewall_s: u64,
    /// `[ior-easy] transferSize` and `blockSize` (bytes per process).
    pub easy_transfer: u64,
    pub easy_block: u64,
    /// `[ior-hard] segmentCount`.
    pub hard_segments: u64,
    /// `[mdtest-easy] n` and `[mdtest-hard] n`: most files per process.
    pub easy_files: u64,
    pub hard_files: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            datadir: None,
            stonewall_s: OFFICIAL_STONEWALL_S,
            easy_transfer: 2 << 20,
            easy_block: 9_920_000 << 20,
            hard_segments: 10_000_000,
            easy_files: 1_000_000,
            hard_files: 1_000_000,
        }
    }
}

/// IO500 keys fsbench does not take, by section: refused naming why.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("global", "api"),
    ("global", "resultdir"),
    ("global", "drop-caches"),
    ("global", "drop-caches-cmd"),
    ("global", "timestamp-datadir"),
    ("global", "timestamp-resultdir"),
    ("global", "verbosity"),
    ("global", "scc"),
    ("global", "dataPacketType"),
    ("ior-easy", "API"),
    ("ior-hard", "API"),
    ("mdtest-easy", "API"),
    ("mdtest-hard", "API"),
    ("find", "external-script"),
    ("find", "external-mpi-args"),
    ("find", "external-extra-args"),
    ("find", "nproc"),
];

/// The sections a file may have.
const SECTIONS: &[&str] = &[
    "global",
    "debug",
    "ior-easy",
    "ior-easy-write",
    "ior-easy-read",
    "ior-hard",
    "ior-hard-write",
    "ior-hard-read",
    "mdtest-easy",
    "mdtest-easy-write",
    "mdtest-easy-stat",
    "mdtest-easy-delete",
    "mdtest-hard",
    "mdtest-hard-write",
    "mdtest-hard-stat",
    "mdtest-hard-read",
    "mdtest-hard-delete",
    "find",
];

fn bounded(v: u64, lo: u64, hi: u64, what: &str) -> Result<u64, UsageError> {
    if v < lo || v > hi {
        return Err(usage!("{what} {v}: must be between {lo} and {hi}"));
    }
    Ok(v)
}

impl Config {
    /// Parse the text of a configuration file named `name`.
    pub fn parse(text: &str, name: &str) -> Result<Config, UsageError> {
        let mut c = Config::default();
        let mut section: Option<String> = None;
        for (i, raw) in text.lines().enumerate() {
            let at = format!("{name} line {}", i + 1);
            let line = raw.split(['#', ';']).next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let s = rest.strip_suffix(']').ok_or_else(|| {
                    usage!(
                        "{at}: a section header is [name]: '{}'",
                        line.escape_default()
                    )
                })?;
                let s = s.trim().to_ascii_lowercase();
                if !SECTIONS.contains(&s.as_str()) {
                    return Err(usage!(
                        "{at}: unknown section [{}]: IO500's sections are {}",
                        s.escape_default(),
                        SECTIONS.join(", ")
                    ));
                }
                section = Some(s);
                continue;
            }
            let (key, value) = line.split_once('=').ok_or_else(|| {
                usage!(
                    "{at}: expected key = value, found '{}'",
                    line.escape_default()
                )
            })?;
            let (key, value) = (key.trim(), value.trim());
            let Some(sec) = section.as_deref() else {
                return Err(usage!(
                    "{at}: '{}' comes before any [section]",
                    key.escape_default()
                ));
            };
            c.set(sec, key, value, &at)?;
        }
        Ok(c)
    }

    fn set(&mut self, sec: &str, key: &str, value: &str, at: &str) -> Result<(), UsageError> {
        let what = format!("{at}: [{sec}] {key}");
        let size = |v: &str| crate::units::parse_size_as(v, crate::units::BareUnit::Bytes, &what);
        let count = |v: &str| crate::units::parse_size_as(v, crate::units::BareUnit::Count, &what);
        match (sec, key.to_ascii_lowercase().as_str()) {
            ("global", "datadir") => {
                if value.is_empty() {
                    return Err(usage!("{what}: give a directory"));
                }
                self.datadir = Some(PathBuf::from(value));
            }
            ("debug", "stonewall-time") => {
                self.stonewall_s = bounded(count(value)?, 1, MAX_STONEWALL_S, &what)?;
            }
            ("ior-easy", "transfersize") => {
                self.easy_transfer = bounded(size(value)?, 1, crate::job::MAX_BLOCK_SIZE, &what)?;
            }
            ("ior-easy", "blocksize") => {
                self.easy_block = bounded(size(value)?, 1, MAX_BLOCK, &what)?;
            }
            ("ior-hard", "segmentcount") => {
                self.hard_segments = bounded(count(value)?, 1, MAX_SEGMENTS, &what)?;
            }
            ("mdtest-easy", "n") => {
                self.easy_files = bounded(count(value)?, 1, crate::mdtest::MAX_ITEMS, &what)?;
            }
            ("mdtest-hard", "n") => {
                self.hard_files = bounded(count(value)?, 1, crate::mdtest::MAX_ITEMS, &what)?;
            }
            (_, "noRun") | (_, "norun") => {
                return Err(usage!(
                    "{what}: fsbench io500 runs every phase (the score needs all twelve)"
                ))
            }
            _ => {
                let known = UNSUPPORTED
                    .iter()
                    .any(|(s, k)| *s == sec && k.eq_ignore_ascii_case(key));
                return Err(if known {
                    usage!("{what} is an IO500 key fsbench io500 does not support: remove it (see docs/io500.md)")
                } else {
                    usage!(
                        "{what}: unknown key; fsbench io500 takes [global] datadir, [debug] stonewall-time, [ior-easy] transferSize and blockSize, [ior-hard] segmentCount, [mdtest-easy] n and [mdtest-hard] n"
                    )
                });
            }
        }
        Ok(())
    }

    /// The checks across keys: a block of whole transfers.
    pub fn check(&self) -> Result<(), UsageError> {
        if self.easy_block < self.easy_transfer
            || !self.easy_block.is_multiple_of(self.easy_transfer)
        {
            return Err(usage!(
                "[ior-easy] blockSize {} must be a multiple of transferSize {}",
                self.easy_block,
                self.easy_transfer
            ));
        }
        Ok(())
    }

    /// The stonewall is below IO500's 300 s: the result cannot stand as IO500's.
    pub(crate) fn unofficial(&self) -> bool {
        self.stonewall_s < OFFICIAL_STONEWALL_S
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io500s_keys_are_read() {
        let c = Config::parse(
            "[global]\ndatadir = /mnt/x # here\n[debug]\nstonewall-time = 5\n[ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[ior-hard]\nsegmentCount = 7\n[mdtest-easy]\nn = 100\n[mdtest-hard]\nn = 50\n[find]\n",
            "c.ini",
        )
        .unwrap();
        assert_eq!(c.datadir, Some(PathBuf::from("/mnt/x")));
        assert_eq!(
            (
                c.stonewall_s,
                c.easy_transfer,
                c.easy_block,
                c.hard_segments
            ),
            (5, 1 << 20, 4 << 20, 7)
        );
        assert_eq!((c.easy_files, c.hard_files), (100, 50));
        assert!(c.unofficial());
        assert!(!Config::default().unofficial());
    }

    #[test]
    fn bad_files_are_one_line_refusals() {
        for (text, want) in [
            ("[global]\nbogus = 1\n", "[global] bogus: unknown key"),
            ("[global]\napi = DFS\n", "does not support"),
            ("[nosuch]\n", "unknown section [nosuch]"),
            ("n = 5\n", "before any [section]"),
            ("[mdtest-easy]\nn = 0\n", "between 1"),
            ("[ior-easy]\ntransferSize = 1t\n", "between 1"),
            ("[debug]\nstonewall-time = x\n", "bad c.ini line 2"),
            ("[global]\njunk\n", "key = value"),
        ] {
            let e = Config::parse(text, "c.ini").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let c = Config {
            easy_block: 3 << 20,
            ..Default::default()
        };
        assert!(c.check().unwrap_err().to_string().contains("multiple"));
    }
}
