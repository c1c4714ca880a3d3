//! I/O sizes that are not one block size: mixed sizes (`--bssplit`, fio's bssplit), where each
//! direction draws the size of every I/O from its own list of sizes and shares,
//! `4k/60:64k/30:1m/10`; one size per direction (`--bs READS,WRITES[,TRIMS]`, fio's `bs=4k,64k`);
//! and sizes drawn from a range by fio's rule (`--bsrange MIN-MAX`, fio's bsrange). Each takes a
//! per-direction form `READS,WRITES[,TRIMS]` (a direction left out takes the one before it).
//! The text form is what the command line and job files take, and what the Job prints back.
//!
//! The runner does not read these per I/O: `SizeTable` lays each direction's sizes out
//! before the run (a list's shares as 100 slots, a range as its first size, step and end),
//! and an I/O's size is one choice drawn from the worker's seeded generator (no allocation,
//! reproducible with `--seed`).

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

/// Splits a per-direction value `READS,WRITES[,TRIMS]` into three parts, a direction left
/// out taking the part before it; `forms` says what is accepted.
fn per_direction<T: Clone>(
    v: &str,
    what: &str,
    forms: &str,
    mut one: impl FnMut(&str) -> Result<T, UsageError>,
) -> Result<[T; 3], UsageError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(usage!(
            "bad {what} '{v}': at most three values (reads, writes, trims); expected {forms}"
        ));
    }
    let mut out: Vec<T> = Vec::with_capacity(3);
    for part in &parts {
        let part = part.trim();
        if part.is_empty() {
            return Err(usage!("bad {what} '{v}': an empty value; expected {forms}"));
        }
        out.push(one(part)?);
    }
    while out.len() < 3 {
        out.push(out[out.len() - 1].clone());
    }
    Ok(out
        .try_into()
        .unwrap_or_else(|_| unreachable!("three values")))
}

/// One I/O size of a per-direction value, between 1 byte and the largest block size.
fn one_size(s: &str, whole: &str, what: &str) -> Result<u64, UsageError> {
    let size = parse_size_as(s, BareUnit::Bytes, what)?;
    if size == 0 || size > MAX_BLOCK_SIZE {
        return Err(usage!(
            "bad {what} '{whole}': size {size} must be between 1 byte and 256m"
        ));
    }
    Ok(size)
}

/// One block size per direction (`--bs READS,WRITES[,TRIMS]`, fio's `bs=4k,64k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BsDirs {
    pub dirs: [u64; 3],
}

const BS_FORMS: &str = "a size, or one per direction as READS,WRITES[,TRIMS], e.g. 4k,64k";

impl BsDirs {
    /// Read `4k,64k` or `4k,64k,1m`; `what` names the option in messages.
    pub fn parse(v: &str, what: &str) -> Result<BsDirs, UsageError> {
        let dirs = per_direction(v, what, BS_FORMS, |s| one_size(s, v, what))?;
        Ok(BsDirs { dirs })
    }

    /// The text form in bytes, trailing directions that repeat the one before left out.
    pub fn spec(&self) -> String {
        let [r, w, t] = self.dirs;
        let mut parts = vec![r.to_string(), w.to_string()];
        if t != w {
            parts.push(t.to_string());
        }
        parts.join(",")
    }
}

impl TryFrom<String> for BsDirs {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        BsDirs::parse(&s, "block_sizes").map_err(|e| e.0)
    }
}

impl From<BsDirs> for String {
    fn from(b: BsDirs) -> String {
        b.spec()
    }
}

/// Sizes drawn from a range per direction (`--bsrange MIN-MAX[,MIN-MAX[,MIN-MAX]]`, fio's
/// bsrange), by fio's rule: a byte count drawn uniformly from `[MIN, MIN+MAX)`, rounded down
/// to a multiple of the step (`--block-align`, else the direction's MIN) and capped at MAX.
/// Every multiple of the step below MAX is as likely, and so is MAX when it is a multiple;
/// otherwise MAX takes the remainder (`5k-7k`: 5k 5/7 of the I/Os, 7k 2/7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BsRange {
    /// Each direction's smallest and largest I/O.
    pub dirs: [(u64, u64); 3],
}

const RANGE_FORMS: &str =
    "MIN-MAX, e.g. 4k-64k, or one range per direction as READS,WRITES[,TRIMS]";

/// Most distinct sizes one direction's range may give (each has its latency histogram).
pub(crate) const MAX_RANGE_SIZES: u64 = 1024;

impl BsRange {
    /// Read `4k-16k` or `4k-16k,64k-128k`; `what` names the option in messages.
    pub fn parse(v: &str, what: &str) -> Result<BsRange, UsageError> {
        let dirs = per_direction(v, what, RANGE_FORMS, |part| {
            let (lo, hi) = part.split_once('-').ok_or_else(|| {
                usage!("bad {what} '{v}': '{part}' is not a range; expected {RANGE_FORMS}")
            })?;
            let (lo, hi) = (one_size(lo, v, what)?, one_size(hi, v, what)?);
            if lo > hi {
                return Err(usage!(
                    "bad {what} '{v}': the range '{part}' ends below its start"
                ));
            }
            Ok((lo, hi))
        })?;
        Ok(BsRange { dirs })
    }

    /// The text form in bytes (`4096-16384`), trailing ranges that repeat the one before
    /// left out.
    pub fn spec(&self) -> String {
        let show = |(lo, hi): (u64, u64)| format!("{lo}-{hi}");
        let [r, w, t] = self.dirs;
        let mut parts = vec![show(r)];
        if w != r || t != w {
            parts.push(show(w));
        }
        if t != w {
            parts.push(show(t));
        }
        parts.join(",")
    }

    /// Direction `dir`'s sizes as (first, step, last): the multiples of the step (`align`,
    /// else the range's start) from the first in the range, and the range's end; `first`
    /// above `last` when no multiple lies in the range.
    pub fn choices(&self, dir: usize, align: Option<u64>) -> (u64, u64, u64) {
        let (lo, hi) = self.dirs[dir];
        let step = align.unwrap_or(lo).max(1);
        (lo.div_ceil(step) * step, step, hi)
    }

    /// Every direction has at least one size, and not more than `MAX_RANGE_SIZES`.
    pub fn check(&self, align: Option<u64>, what: &str) -> Result<(), UsageError> {
        for d in 0..3 {
            let (lo, hi) = self.dirs[d];
            let (first, step, last) = self.choices(d, align);
            let count = if first > last {
                0
            } else {
                (last - first) / step + 1
            };
            if count == 0 {
                return Err(usage!(
                    "bad {what} '{}': no multiple of the alignment {step} lies between {lo} and {hi}: widen the range or change --block-align",
                    self.spec()
                ));
            }
            if count > MAX_RANGE_SIZES {
                return Err(usage!(
                    "bad {what} '{}': {lo}-{hi} in steps of {step} gives {count} sizes, at most {MAX_RANGE_SIZES}: give a larger --block-align or a narrower range",
                    self.spec()
                ));
            }
        }
        Ok(())
    }
}

impl TryFrom<String> for BsRange {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        BsRange::parse(&s, "bsrange").map_err(|e| e.0)
    }
}

impl From<BsRange> for String {
    fn from(b: BsRange) -> String {
        b.spec()
    }
}

/// Slots per direction in a [`SizeTable`] made from a list: one per percent.
pub(crate) const SLOTS: usize = 100;

/// How one direction of a [`SizeTable`] draws: from its slots, or by fio's bsrange rule from
/// a byte count `first + i` (i below `last + step - first`) rounded down to a multiple of
/// `step` and capped at `last`. One size is `first == step == last`.
#[derive(Debug, Clone, Copy)]
struct Draw {
    first: u32,
    step: u32,
    /// 0: the direction draws from its [`SLOTS`] slots.
    last: u32,
}

impl Draw {
    /// Byte counts drawn among (each multiple of the step below `last` takes `step` of them).
    fn span(&self) -> u32 {
        self.last + self.step - self.first
    }

    #[inline(always)]
    fn size(&self, i: u64) -> u32 {
        let x = self.first + i as u32;
        (x - x % self.step).min(self.last)
    }

    /// Each size this draw gives, with how many of the [`Draw::span`] byte counts give it.
    fn weights(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let below = (self.first..self.last).step_by(self.step as usize);
        let top = self.span() - below.len() as u32 * self.step;
        below.map(|s| (s, self.step)).chain([(self.last, top)])
    }
}

/// Every direction's sizes, laid out before the run: a list (`--bssplit`) as [`SLOTS`] slots,
/// a size taking as many slots as its percentage; a range (`--bsrange`) or one size
/// (`--bs READS,WRITES`) as its first size, step and count. An I/O's size is the choice a
/// uniform draw below [`SizeTable::choices`] picks.
#[derive(Debug, Clone)]
pub(crate) struct SizeTable {
    slots: Box<[u32; 3 * SLOTS]>,
    draws: [Draw; 3],
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
        let slotted = Draw {
            first: 0,
            step: 0,
            last: 0,
        };
        SizeTable {
            slots,
            draws: [slotted; 3],
            classes,
        }
    }

    /// Each direction's (first, step, last) of sizes ([`BsRange::choices`]), or one size
    /// (`(s, s, s)`). `first` is at most `last`, and the sizes at most 256m
    /// ([`BsRange::check`]).
    pub(crate) fn from_choices(dirs: [(u64, u64, u64); 3]) -> SizeTable {
        let draws = dirs.map(|(first, step, last)| Draw {
            first: first as u32,
            step: step.max(1) as u32,
            last: last.max(first).max(1) as u32,
        });
        let mut classes: Vec<u32> = draws
            .iter()
            .flat_map(|d| d.weights().map(|(s, _)| s))
            .collect();
        classes.sort_unstable();
        classes.dedup();
        SizeTable {
            slots: Box::new([0u32; 3 * SLOTS]),
            draws,
            classes,
        }
    }

    /// How many choices direction `dir` (0 reads, 1 writes, 2 trims) draws among.
    #[inline(always)]
    pub(crate) fn choices(&self, dir: usize) -> u64 {
        match self.draws[dir] {
            d if d.last == 0 => SLOTS as u64,
            d => d.span() as u64,
        }
    }

    /// The size of choice `i` (below [`SizeTable::choices`]) of direction `dir`.
    #[inline(always)]
    pub(crate) fn size(&self, dir: usize, i: u64) -> u32 {
        let d = self.draws[dir];
        if d.last == 0 {
            self.slots[dir * SLOTS + i as usize]
        } else {
            d.size(i)
        }
    }

    /// Direction `dir`'s mean I/O size over its choices.
    pub(crate) fn mean_size(&self, dir: usize) -> f64 {
        let d = self.draws[dir];
        if d.last == 0 {
            let slots = &self.slots[dir * SLOTS..(dir + 1) * SLOTS];
            return slots.iter().map(|&s| s as f64).sum::<f64>() / SLOTS as f64;
        }
        let sum: f64 = d.weights().map(|(s, w)| s as f64 * w as f64).sum();
        sum / d.span() as f64
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
    fn per_direction_sizes_and_ranges_read_and_print_back() {
        let b = BsDirs::parse("4k,64k", "--bs").unwrap();
        assert_eq!(b.dirs, [4096, 65536, 65536]);
        assert_eq!(b.spec(), "4096,65536");
        assert_eq!(BsDirs::parse(&b.spec(), "x").unwrap(), b);
        assert_eq!(
            BsDirs::parse("4k,64k,1m", "x").unwrap().spec(),
            "4096,65536,1048576"
        );
        let r = BsRange::parse("4k-16k", "--bsrange").unwrap();
        assert_eq!(r.dirs, [(4096, 16384); 3]);
        assert_eq!(r.spec(), "4096-16384");
        assert_eq!(r.choices(0, None), (4096, 4096, 16384));
        assert_eq!(r.choices(0, Some(8192)), (8192, 8192, 16384));
        let r = BsRange::parse("4k-16k,64k-64k", "x").unwrap();
        assert_eq!(r.spec(), "4096-16384,65536-65536");
        assert_eq!(BsRange::parse(&r.spec(), "x").unwrap(), r);
        for (v, want) in [
            ("16k-4k", "ends below its start"),
            ("4k", "is not a range"),
            ("4k-16k,", "an empty value"),
            ("1-2,1-2,1-2,1-2", "at most three values"),
            ("0-4k", "between 1 byte and 256m"),
            ("4k-1g", "between 1 byte and 256m"),
        ] {
            let e = BsRange::parse(v, "--bsrange").unwrap_err().0;
            assert!(e.contains(want), "{v}: {e}");
        }
        let e = BsRange::parse("5k-7k", "x").unwrap();
        assert!(e
            .check(Some(8192), "--bsrange")
            .unwrap_err()
            .0
            .contains("no multiple"));
        let e = BsRange::parse("512-1m", "x").unwrap();
        assert!(e
            .check(None, "--bsrange")
            .unwrap_err()
            .0
            .contains("2048 sizes"));
        assert!(e.check(Some(4096), "--bsrange").is_ok());
    }

    #[test]
    fn a_range_table_draws_by_fios_rule() {
        // How many of a direction's choices give each size.
        let shares = |t: &SizeTable, d: usize| {
            let mut m = std::collections::BTreeMap::new();
            for i in 0..t.choices(d) {
                *m.entry(t.size(d, i)).or_insert(0u64) += 1;
            }
            m.into_iter().collect::<Vec<_>>()
        };
        // MAX a multiple of MIN: every multiple alike, MAX too.
        let r = BsRange::parse("4k-16k,64k-64k", "x").unwrap();
        let t = SizeTable::from_choices([0, 1, 2].map(|d| r.choices(d, None)));
        assert_eq!(
            shares(&t, 0),
            [(4096, 4096), (8192, 4096), (12288, 4096), (16384, 4096)]
        );
        assert_eq!(shares(&t, 1), [(65536, 65536)]);
        assert_eq!(t.classes(), &[4096, 8192, 12288, 16384, 65536]);
        assert_eq!(t.mean_size(0), 10240.0);
        // MAX not a multiple: fio's 5k-7k is 5k for 5/7 of the I/Os, 7k for 2/7.
        let r = BsRange::parse("5k-7k", "x").unwrap();
        let t = SizeTable::from_choices([0, 1, 2].map(|d| r.choices(d, None)));
        assert_eq!(shares(&t, 0), [(5120, 5120), (7168, 2048)]);
        assert_eq!(t.classes(), &[5120, 7168]);
        // One size per direction.
        let t = SizeTable::from_choices([(4096, 4096, 4096), (8192, 8192, 8192), (1, 1, 1)]);
        assert_eq!(
            (shares(&t, 0), shares(&t, 1)),
            (vec![(4096, 4096)], vec![(8192, 8192)])
        );
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
