//! Mixed I/O sizes (`--bssplit`, fio's bssplit): each direction draws the size of every I/O
//! from its own list of sizes and shares, `4k/60:64k/30:1m/10`, or per direction
//! `READS,WRITES[,TRIMS]` (a direction left out takes the list before it). The text form is
//! what the command line, job files and sweep axes take, and what the Job prints back.
//!
//! The runner does not read these lists per I/O: [`SizeTable`] lays each direction's shares
//! out as 100 slots before the run, and an I/O's size is one slot drawn from the worker's
//! seeded generator (no allocation, reproducible with `--seed`).

use super::MAX_BLOCK_SIZE;
use crate::error::UsageError;
use crate::units::{format_size_exact, parse_size_as, BareUnit};
use crate::usage;
use serde::{Deserialize, Serialize};

/// One size of a direction's list and the percentage of that direction's I/Os that take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeShare {
    pub size: u64,
    pub pct: u8,
}

/// Most sizes one direction may list.
const MAX_SIZES: usize = 64;

/// The I/O sizes of each direction: reads, writes, trims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BsSplit {
    pub dirs: [Vec<SizeShare>; 3],
}

const FORMS: &str = "SIZE/PERCENT entries joined by ':' adding up to 100, e.g. 4k/60:64k/30:1m/10, or one such list per direction as READS,WRITES[,TRIMS]";

impl BsSplit {
    /// Read `4k/60:64k/40` or `4k/50:8k/50,64k/100`; `what` names the option in messages.
    pub fn parse(v: &str, what: &str) -> Result<BsSplit, UsageError> {
        let parts: Vec<&str> = v.split(',').collect();
        if parts.len() > 3 {
            return Err(usage!(
                "bad {what} '{v}': at most three lists (reads, writes, trims); expected {FORMS}"
            ));
        }
        let mut lists = Vec::with_capacity(3);
        for part in &parts {
            lists.push(Self::parse_list(part.trim(), v, what)?);
        }
        while lists.len() < 3 {
            let last = lists.last().cloned().unwrap_or_default();
            lists.push(last);
        }
        let [r, w, t]: [Vec<SizeShare>; 3] = lists.try_into().expect("three lists");
        Ok(BsSplit { dirs: [r, w, t] })
    }

    fn parse_list(list: &str, whole: &str, what: &str) -> Result<Vec<SizeShare>, UsageError> {
        if list.is_empty() {
            return Err(usage!(
                "bad {what} '{whole}': an empty list; expected {FORMS}"
            ));
        }
        let mut out: Vec<SizeShare> = Vec::new();
        let mut sum = 0u32;
        for entry in list.split(':') {
            let (size, pct) = entry.split_once('/').ok_or_else(|| {
                usage!("bad {what} '{whole}': entry '{entry}' has no /PERCENT; expected {FORMS}")
            })?;
            let size = parse_size_as(size, BareUnit::Bytes, what)?;
            if size == 0 || size > MAX_BLOCK_SIZE {
                return Err(usage!(
                    "bad {what} '{whole}': size {size} in '{entry}' must be between 1 byte and 256m"
                ));
            }
            let pct: u8 = pct.trim().parse().ok().filter(|p| *p <= 100).ok_or_else(|| {
                usage!("bad {what} '{whole}': percentage '{pct}' in '{entry}' must be a whole number 0 to 100")
            })?;
            sum += pct as u32;
            if pct == 0 {
                continue;
            }
            match out.iter_mut().find(|s| s.size == size) {
                Some(s) => s.pct += pct,
                None => out.push(SizeShare { size, pct }),
            }
            if out.len() > MAX_SIZES {
                return Err(usage!(
                    "bad {what} '{whole}': at most {MAX_SIZES} sizes per direction"
                ));
            }
        }
        if sum != 100 {
            return Err(usage!(
                "bad {what} '{whole}': the percentages of '{list}' add up to {sum}, not 100"
            ));
        }
        Ok(out)
    }

    /// The text form: one list when every direction has the same, else `READS,WRITES,TRIMS`
    /// (the trailing lists that repeat the one before are left out).
    pub fn spec(&self) -> String {
        let show = |l: &[SizeShare]| {
            let e: Vec<String> = l
                .iter()
                .map(|s| format!("{}/{}", format_size_exact(s.size), s.pct))
                .collect();
            e.join(":")
        };
        let [r, w, t] = &self.dirs;
        let mut parts = vec![show(r)];
        if w != r || t != w {
            parts.push(show(w));
        }
        if t != w {
            parts.push(show(t));
        }
        parts.join(",")
    }

    /// Largest I/O of any direction (buffers are this big).
    pub fn max_size(&self) -> u64 {
        self.dirs
            .iter()
            .flatten()
            .map(|s| s.size)
            .max()
            .unwrap_or(1)
    }

    /// Smallest I/O of any direction (random offsets are multiples of it unless
    /// `--block-align` says otherwise).
    pub fn min_size(&self) -> u64 {
        self.dirs
            .iter()
            .flatten()
            .map(|s| s.size)
            .min()
            .unwrap_or(1)
    }

    /// Mean size of a direction's I/Os (0 reads, 1 writes, 2 trims).
    pub fn mean_size(&self, dir: usize) -> f64 {
        self.dirs[dir]
            .iter()
            .map(|s| s.size as f64 * s.pct as f64 / 100.0)
            .sum()
    }
}

impl TryFrom<String> for BsSplit {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        BsSplit::parse(&s, "bssplit").map_err(|e| e.0)
    }
}

impl From<BsSplit> for String {
    fn from(b: BsSplit) -> String {
        b.spec()
    }
}

/// Slots per direction in a [`SizeTable`]: one per percent.
pub(crate) const SLOTS: usize = 100;

/// Every direction's sizes laid out as [`SLOTS`] slots, a size taking as many slots as its
/// percentage: an I/O's size is the slot a uniform draw in [0, 100) picks.
#[derive(Debug, Clone)]
pub(crate) struct SizeTable {
    slots: Box<[u32; 3 * SLOTS]>,
    /// The distinct sizes of all directions, ascending: the Result's size classes.
    classes: Vec<u32>,
}

impl SizeTable {
    pub(crate) fn new(split: &BsSplit) -> SizeTable {
        let mut slots = Box::new([0u32; 3 * SLOTS]);
        for (d, list) in split.dirs.iter().enumerate() {
            let mut at = d * SLOTS;
            for s in list {
                for _ in 0..s.pct {
                    slots[at] = s.size as u32;
                    at += 1;
                }
            }
        }
        let mut classes: Vec<u32> = split.dirs.iter().flatten().map(|s| s.size as u32).collect();
        classes.sort_unstable();
        classes.dedup();
        SizeTable { slots, classes }
    }

    /// The size in slot `slot` (below [`SLOTS`]) of direction `dir` (0 reads, 1 writes, 2 trims).
    #[inline(always)]
    pub(crate) fn size(&self, dir: usize, slot: u64) -> u32 {
        self.slots[dir * SLOTS + slot as usize]
    }

    pub(crate) fn classes(&self) -> &[u32] {
        &self.classes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_serves_every_direction_and_prints_back() {
        let s = BsSplit::parse("4k/60:64k/30:1m/10", "--bssplit").unwrap();
        assert_eq!(s.dirs[0], s.dirs[1]);
        assert_eq!(s.dirs[1], s.dirs[2]);
        assert_eq!(s.spec(), "4k/60:64k/30:1m/10");
        assert_eq!((s.min_size(), s.max_size()), (4096, 1 << 20));
        let s = BsSplit::parse("4k/50:8k/50,64k/100", "--bssplit").unwrap();
        assert_eq!(
            s.dirs[1],
            vec![SizeShare {
                size: 65536,
                pct: 100
            }]
        );
        assert_eq!(s.dirs[2], s.dirs[1], "trims take the writes' list");
        assert_eq!(s.spec(), "4k/50:8k/50,64k/100");
        assert_eq!(BsSplit::parse(&s.spec(), "x").unwrap(), s);
        assert_eq!(s.mean_size(0), 6144.0);
    }

    #[test]
    fn mistakes_are_refused_with_what_was_wrong() {
        for (v, want) in [
            ("4k/60:64k/30", "add up to 90, not 100"),
            ("4k/60:64k/50", "add up to 110"),
            ("0/100", "between 1 byte and 256m"),
            ("4q/100", "bad --bssplit '4q'"),
            ("4k", "has no /PERCENT"),
            ("4k/x", "percentage 'x'"),
            ("4k/100,", "an empty list"),
            ("4k/100,4k/100,4k/100,4k/100", "at most three lists"),
            ("512m/100", "between 1 byte and 256m"),
        ] {
            let e = BsSplit::parse(v, "--bssplit").unwrap_err().0;
            assert!(e.contains(want), "{v}: {e}");
        }
    }

    #[test]
    fn the_table_gives_each_size_its_share_of_slots() {
        let s = BsSplit::parse("4k/60:64k/30:1m/10,8k/100", "x").unwrap();
        let t = SizeTable::new(&s);
        let count = |d, size| (0..SLOTS as u64).filter(|&i| t.size(d, i) == size).count();
        assert_eq!(
            (count(0, 4096), count(0, 65536), count(0, 1 << 20)),
            (60, 30, 10)
        );
        assert_eq!(count(1, 8192), 100);
        assert_eq!(t.classes(), &[4096, 8192, 65536, 1 << 20]);
    }
}
