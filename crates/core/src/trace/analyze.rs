//! What a trace says about an application's I/O — the questions the tuning chapter asks of
//! vxtrace: read or write, large or small, sequential or random, whole files or hot spots,
//! how many at once; and, for a striped layout, how many device I/Os each I/O becomes.

use super::{Trace, TraceOp, TraceRecord};
use crate::error::UsageError;
use crate::usage;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where each traced file's data lies on its device (FIEMAP extents), by trace file index;
/// `None` for files that could not be mapped. With it, stripe arithmetic uses device offsets
/// (what a volume manager sees) instead of file offsets.
pub type Layout = Vec<Option<Vec<crate::probe::fiemap::Extent>>>;

/// The device ranges (offset, length) behind `len` bytes at `offset` of trace file `file`:
/// the file's extents when the layout maps it (holes contribute nothing), else the file
/// range itself.
pub fn device_ranges(layout: Option<&Layout>, file: u32, offset: u64, len: u64) -> Vec<(u64, u64)> {
    let Some(Some(extents)) = layout.and_then(|l| l.get(file as usize)) else {
        return vec![(offset, len)];
    };
    let end = offset.saturating_add(len);
    extents
        .iter()
        .filter(|e| e.logical < end && e.logical + e.length > offset)
        .map(|e| {
            let from = offset.max(e.logical);
            let to = end.min(e.logical + e.length);
            (e.physical + (from - e.logical), to - from)
        })
        .collect()
}

/// FIEMAP layout of every file of a trace that still exists (paths as recorded).
pub fn layout_of(t: &Trace) -> Layout {
    t.files
        .iter()
        .map(|f| {
            let file = std::fs::File::open(f).ok()?;
            crate::probe::fiemap::extents(&file).ok()
        })
        .collect()
}

/// The most columns `--stripe` analyses: each gets a count in the report, so the report (and
/// the memory that renders it) grows with them; real striped volumes have far fewer.
pub const MAX_STRIPE_COLUMNS: u32 = 65536;

/// A striped layout: stripe unit in bytes and number of columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stripe {
    pub unit_bytes: u64,
    pub columns: u32,
}

impl Stripe {
    /// `64k:5` — stripe unit, colon, columns.
    pub fn parse(s: &str) -> Result<Stripe, UsageError> {
        let bad = || usage!("bad --stripe '{s}': expected STRIPE_UNIT:COLUMNS, e.g. 64k:5");
        let (u, c) = s.split_once(':').ok_or_else(bad)?;
        let unit_bytes = crate::units::parse_size(u).map_err(|_| bad())?;
        let columns: u32 = c.trim().parse().map_err(|_| bad())?;
        if unit_bytes == 0 || columns == 0 {
            return Err(bad());
        }
        let st = Stripe {
            unit_bytes,
            columns,
        };
        if columns > MAX_STRIPE_COLUMNS {
            let fmt = |b: u64| crate::units::format_bytes(b as f64);
            return Err(usage!(
                "--stripe {s}: {columns} columns would need about {} of memory and print at least {} of per-column counts; at most {MAX_STRIPE_COLUMNS} columns are analysed",
                fmt(st.counter_bytes()),
                fmt(st.report_bytes())
            ));
        }
        Ok(st)
    }

    /// The device I/Os one I/O of `len` bytes at `offset` becomes: (column, offset on that
    /// column, length), assuming the file's data starts at the start of a stripe.
    pub fn split(&self, offset: u64, len: u64) -> Vec<(u32, u64, u64)> {
        let mut out = Vec::new();
        let su = self.unit_bytes;
        let mut pos = offset;
        let end = offset.saturating_add(len);
        while pos < end {
            let chunk = pos / su;
            let within = pos % su;
            let n = (su - within).min(end - pos);
            let col = (chunk % self.columns as u64) as u32;
            let col_off = (chunk / self.columns as u64) * su + within;
            out.push((col, col_off, n));
            pos += n;
        }
        out
    }

    /// How many device I/Os, without building the list.
    pub fn pieces(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let last = offset.saturating_add(len - 1);
        last / self.unit_bytes - offset / self.unit_bytes + 1
    }

    /// Memory the per-column part of a stripe report takes (checked before allocating): the
    /// counters and the difference array that fills them, and rendering them (a string of
    /// each number, the line they are joined into, the JSON array).
    pub fn counter_bytes(&self) -> u64 {
        (self.columns as u64 + 1) * (16 + 64)
    }

    /// The least the per-column counts print: a digit and a separator per column.
    pub fn report_bytes(&self) -> u64 {
        self.columns as u64 * 2
    }
}

/// Device I/Os per column, counted arithmetically: an I/O of k pieces adds k / columns to
/// every column and one more to the k % columns columns after its first, so the cost per
/// I/O does not grow with its length or with the number of columns.
struct ColumnCounts {
    columns: u64,
    full_rounds: u64,
    /// Difference array of the partial rounds (length columns + 1).
    diff: Vec<i64>,
}

impl ColumnCounts {
    fn new(st: &Stripe) -> Result<ColumnCounts, UsageError> {
        let n = st.columns as usize + 1;
        Ok(ColumnCounts {
            columns: st.columns as u64,
            full_rounds: 0,
            diff: super::budget::try_filled(n, 0i64, "trace --analyze: the --stripe columns")?,
        })
    }

    /// Count the pieces of the device range (offset, len); returns how many there were.
    fn add(&mut self, st: &Stripe, offset: u64, len: u64) -> u64 {
        let k = st.pieces(offset, len);
        if k == 0 {
            return 0;
        }
        let first = (offset / st.unit_bytes) % self.columns;
        self.full_rounds += k / self.columns;
        let rem = k % self.columns;
        let end = first + rem;
        self.diff[first as usize] += 1;
        if end <= self.columns {
            self.diff[end as usize] -= 1;
        } else {
            self.diff[self.columns as usize] -= 1;
            self.diff[0] += 1;
            self.diff[(end - self.columns) as usize] -= 1;
        }
        k
    }

    fn finish(self) -> Vec<u64> {
        let mut run = 0i64;
        let full = self.full_rounds;
        let mut diff = self.diff;
        diff.pop();
        // Reuse the difference array's memory for the result.
        diff.into_iter()
            .map(|d| {
                run += d;
                full + run as u64
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SizeBucket {
    /// Upper bound of the bucket (sizes above the previous bound, up to this one).
    pub max_bytes: u64,
    pub reads: u64,
    pub writes: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Region {
    pub offset: u64,
    pub ops: u64,
    pub share_pct: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct FileSummary {
    pub file: String,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub opens: u64,
    pub syncs: u64,
    pub sequential_pct: f64,
    pub min_offset: u64,
    pub max_end: u64,
    pub hot_regions: Vec<Region>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StripeReport {
    pub stripe: Option<Stripe>,
    pub app_ios: u64,
    pub device_ios: u64,
    pub device_ios_per_app_io: f64,
    /// (device I/Os an application I/O became, how many application I/Os did so).
    pub split_histogram: Vec<(u64, u64)>,
    /// Device I/Os that landed on each column.
    pub per_column_ios: Vec<u64>,
    /// The largest split seen, as (id, offset, len, device I/Os).
    pub worst: Option<(u64, u64, u64, u64)>,
    /// Files whose device offsets came from FIEMAP (the rest use file offsets).
    pub files_mapped_to_device: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Analysis {
    pub records: u64,
    pub duration_s: f64,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub opens: u64,
    pub closes: u64,
    pub fsyncs: u64,
    pub errors: u64,
    pub read_pct_of_ops: f64,
    pub sequential: u64,
    pub random: u64,
    /// First I/O to each file: neither sequential nor random.
    pub first: u64,
    pub sequential_pct: f64,
    pub sizes: Vec<SizeBucket>,
    pub mean_io_bytes: f64,
    pub threads: u64,
    pub max_in_flight: u64,
    /// Time-weighted mean number of calls in progress while any was.
    pub mean_in_flight: f64,
    pub region_bytes: u64,
    pub files: Vec<FileSummary>,
    pub stripe: Option<StripeReport>,
}

fn size_bucket(n: u64) -> u64 {
    n.max(512).next_power_of_two()
}

/// Analyse a trace. Hot regions are counted in `region_bytes` slices of each file.
pub fn analyze(
    t: &Trace,
    region_bytes: u64,
    stripe: Option<Stripe>,
) -> Result<Analysis, UsageError> {
    analyze_on(t, region_bytes, stripe, None)
}

/// Memory an analysis of `records` records (with `stripe`) takes beyond the trace itself:
/// the data-call list, the concurrency events, the per-file and per-region maps, the stripe
/// counters. Checked before anything is allocated.
pub fn estimate_bytes(records: u64, stripe: Option<Stripe>) -> u64 {
    // 8 (data list) + 32 (two events) + ~3 x 64 (map entries: file, region, last end).
    records
        .saturating_mul(8 + 32 + 192)
        .saturating_add(stripe.map(|s| s.counter_bytes()).unwrap_or(0))
}

/// Share of `of` that `x` is, in percent (0 when `of` is 0).
fn pct(x: u64, of: u64) -> f64 {
    if of > 0 {
        x as f64 * 100.0 / of as f64
    } else {
        0.0
    }
}

/// Per-file and per-region tallies of the data calls, kept while counting.
#[derive(Default)]
struct Tally {
    sizes: BTreeMap<u64, SizeBucket>,
    files: BTreeMap<u32, FileSummary>,
    regions: BTreeMap<(u32, u64), u64>,
    last_end: BTreeMap<u32, u64>,
    seq_per_file: BTreeMap<u32, (u64, u64)>,
    total_bytes: u64,
}

/// Count every call: threads, errors, opens, closes, syncs; enter every file.
fn count_calls(t: &Trace, a: &mut Analysis, tally: &mut Tally) {
    let files = &mut tally.files;
    let mut threads = std::collections::BTreeSet::new();
    for r in &t.records {
        threads.insert(r.thread);
        if r.result < 0 {
            a.errors += 1;
        }
        let f = files.entry(r.file).or_insert_with(|| FileSummary {
            file: t.files.get(r.file as usize).cloned().unwrap_or_default(),
            min_offset: u64::MAX,
            ..Default::default()
        });
        match r.op {
            TraceOp::Open => {
                a.opens += 1;
                f.opens += 1;
            }
            TraceOp::Close => a.closes += 1,
            TraceOp::Fsync | TraceOp::Fdatasync => {
                a.fsyncs += 1;
                f.syncs += 1;
            }
            // Data calls are summarised below; metadata calls other than open, close and
            // the syncs (a workload's unlink, stat, mkdir, readdir) are not summarised yet.
            TraceOp::Read
            | TraceOp::Write
            | TraceOp::Unlink
            | TraceOp::Stat
            | TraceOp::Mkdir
            | TraceOp::Readdir
            | TraceOp::Trim => {}
        }
    }
    a.threads = threads.len() as u64;
}

/// Count the data calls: sizes, directions, sequential or random, hot regions.
fn count_data(data: &[&TraceRecord], region_bytes: u64, a: &mut Analysis, tally: &mut Tally) {
    let Tally {
        sizes,
        files,
        regions,
        last_end,
        seq_per_file,
        total_bytes,
    } = tally;
    for r in data {
        let n = r.done_bytes();
        *total_bytes += n;
        let b = sizes.entry(size_bucket(n)).or_insert_with(|| SizeBucket {
            max_bytes: size_bucket(n),
            ..Default::default()
        });
        let f = files
            .get_mut(&r.file)
            .expect("every record's file was entered above");
        if r.op == TraceOp::Read {
            a.reads += 1;
            a.read_bytes += n;
            b.reads += 1;
            f.reads += 1;
            f.read_bytes += n;
        } else {
            a.writes += 1;
            a.write_bytes += n;
            b.writes += 1;
            f.writes += 1;
            f.write_bytes += n;
        }
        f.min_offset = f.min_offset.min(r.offset);
        f.max_end = f.max_end.max(r.offset.saturating_add(n));
        let s = seq_per_file.entry(r.file).or_default();
        match last_end.insert(r.file, r.offset.saturating_add(n)) {
            None => a.first += 1,
            Some(prev) if prev == r.offset => {
                a.sequential += 1;
                s.0 += 1;
            }
            Some(_) => {
                a.random += 1;
                s.1 += 1;
            }
        }
        *regions
            .entry((r.file, r.offset / region_bytes))
            .or_default() += 1;
    }
}

/// Finish each file's summary (sequential share, three hottest regions) and list the files,
/// busiest first.
fn summarise_files(tally: Tally, region_bytes: u64) -> Vec<FileSummary> {
    let Tally {
        mut files,
        regions,
        seq_per_file,
        ..
    } = tally;
    for (id, f) in files.iter_mut() {
        let (s, r) = seq_per_file.get(id).copied().unwrap_or_default();
        f.sequential_pct = pct(s, s + r);
        if f.min_offset == u64::MAX {
            f.min_offset = 0;
        }
        let ops = f.reads + f.writes;
        let mut rs: Vec<Region> = regions
            .range((*id, 0)..=(*id, u64::MAX))
            .map(|(&(_, reg), &n)| Region {
                offset: reg.saturating_mul(region_bytes),
                ops: n,
                share_pct: pct(n, ops),
            })
            .collect();
        rs.sort_by(|x, y| y.ops.cmp(&x.ops).then(x.offset.cmp(&y.offset)));
        rs.truncate(3);
        f.hot_regions = rs;
    }
    let mut fl: Vec<FileSummary> = files.into_values().collect();
    fl.sort_by(|x, y| {
        (y.reads + y.writes)
            .cmp(&(x.reads + x.writes))
            .then(x.file.cmp(&y.file))
    });
    fl
}

/// Concurrency: sweep the start/end events of every call for the most and the time-weighted
/// mean number of calls in progress.
fn concurrency(t: &Trace, a: &mut Analysis) -> Result<(), UsageError> {
    // Concurrency: sweep the start/end events of every call.
    let mut ev: Vec<(u64, i32)> =
        super::budget::try_vec(t.records.len().saturating_mul(2), "trace --analyze")?;
    for r in &t.records {
        ev.push((r.start_ns, 1));
        ev.push((r.end_ns.max(r.start_ns), -1));
    }
    // Ends before starts at the same instant: back-to-back calls are not concurrent.
    ev.sort();
    let (mut cur, mut busy_ns, mut weighted) = (0i64, 0u64, 0f64);
    let mut prev_t = ev.first().map(|e| e.0).unwrap_or(0);
    for (tm, d) in ev {
        if cur > 0 {
            busy_ns += tm - prev_t;
            weighted += (tm - prev_t) as f64 * cur as f64;
        }
        cur += d as i64;
        a.max_in_flight = a.max_in_flight.max(cur.max(0) as u64);
        prev_t = tm;
    }
    a.mean_in_flight = if busy_ns > 0 {
        weighted / busy_ns as f64
    } else {
        0.0
    };
    Ok(())
}

/// Device I/Os per application I/O on the stripe, with device offsets where `layout` maps
/// a file.
fn stripe_report(
    data: &[&TraceRecord],
    st: Stripe,
    layout: Option<&Layout>,
) -> Result<StripeReport, UsageError> {
    let mut rep = StripeReport {
        stripe: Some(st),
        files_mapped_to_device: layout
            .map(|l| l.iter().filter(|e| e.is_some()).count() as u64)
            .unwrap_or(0),
        ..Default::default()
    };
    let mut cols = ColumnCounts::new(&st)?;
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
    for r in data {
        let n = r.done_bytes();
        let k: u64 = device_ranges(layout, r.file, r.offset, n)
            .into_iter()
            .map(|(o, l)| cols.add(&st, o, l))
            .sum();
        rep.app_ios += 1;
        rep.device_ios += k;
        *hist.entry(k).or_default() += 1;
        if rep.worst.is_none_or(|w| k > w.3) {
            rep.worst = Some((r.id, r.offset, n, k));
        }
    }
    rep.device_ios_per_app_io = if rep.app_ios > 0 {
        rep.device_ios as f64 / rep.app_ios as f64
    } else {
        0.0
    };
    rep.split_histogram = hist.into_iter().collect();
    rep.per_column_ios = cols.finish();
    Ok(rep)
}

/// [`analyze`], with stripe arithmetic on device offsets where `layout` maps a file.
pub fn analyze_on(
    t: &Trace,
    region_bytes: u64,
    stripe: Option<Stripe>,
    layout: Option<&Layout>,
) -> Result<Analysis, UsageError> {
    super::budget::check(
        "trace --analyze",
        estimate_bytes(t.records.len() as u64, stripe),
    )?;
    let region_bytes = region_bytes.max(1);
    let mut a = Analysis {
        records: t.records.len() as u64,
        region_bytes,
        ..Default::default()
    };
    let mut data: Vec<&TraceRecord> = super::budget::try_vec(
        t.records
            .iter()
            .filter(|r| r.op.is_data() && r.result > 0)
            .count(),
        "trace --analyze",
    )?;
    data.extend(t.records.iter().filter(|r| r.op.is_data() && r.result > 0));
    let mut tally = Tally::default();
    count_calls(t, &mut a, &mut tally);
    count_data(&data, region_bytes, &mut a, &mut tally);
    a.read_pct_of_ops = pct(a.reads, a.reads + a.writes);
    a.sequential_pct = pct(a.sequential, a.sequential + a.random);
    a.mean_io_bytes = if data.is_empty() {
        0.0
    } else {
        tally.total_bytes as f64 / data.len() as f64
    };
    a.sizes = std::mem::take(&mut tally.sizes).into_values().collect();
    a.files = summarise_files(tally, region_bytes);
    concurrency(t, &mut a)?;
    let first = t.records.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let last = t.records.iter().map(|r| r.end_ns).max().unwrap_or(0);
    a.duration_s = last.saturating_sub(first) as f64 / 1e9;
    if let Some(st) = stripe {
        a.stripe = Some(stripe_report(&data, st, layout)?);
    }
    Ok(a)
}

/// A record of thread 1 on file 0 that moved all its `len` bytes (tests here and in the
/// report layer).
#[cfg(any(test, feature = "test-support"))]
pub fn rec(id: u64, op: TraceOp, offset: u64, len: u64, start: u64, end: u64) -> TraceRecord {
    TraceRecord {
        id,
        thread: 1,
        op,
        file: 0,
        offset,
        len,
        start_ns: start,
        end_ns: end,
        result: len as i64,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn seed_example_one_megabyte_over_32k_stripe_unit() {
        // vxtrace in the tuning chapter: a 1 MB read (2048 blocks at block 43008) on a
        // volume with a 32 KB stripe unit became 32 disk I/Os of 64 blocks over 5 columns.
        let st = Stripe::parse("32k:5").unwrap();
        let off = 43008 * 512;
        let parts = st.split(off, 1 << 20);
        assert_eq!(parts.len(), 32);
        assert_eq!(st.pieces(off, 1 << 20), 32);
        assert!(parts.iter().all(|p| p.2 == 32 * 1024));
        let mut per_col = [0; 5];
        for p in &parts {
            per_col[p.0 as usize] += 1;
        }
        // Block 43008 is stripe unit 672, on column 672 % 5 = 2: columns 2 and 3 get the
        // two pieces beyond six full rounds, as c1t1d4s2 and c1t1d5s2 do in the seed.
        assert_eq!(per_col, [6, 6, 7, 7, 6]);
        assert_eq!(parts[0].0, 2);
        // Consecutive pieces go to consecutive columns.
        assert_eq!((parts[0].0 + 1) % 5, parts[1].0);
    }

    #[test]
    fn device_ranges_follow_extents_and_skip_holes() {
        use crate::probe::fiemap::Extent;
        let ex = |l: u64, p: u64, n: u64| Extent {
            logical: l,
            physical: p,
            length: n,
            flags: 0,
        };
        let layout: Layout = vec![
            Some(vec![ex(0, 1 << 20, 8192), ex(16384, 5 << 20, 8192)]),
            None,
        ];
        // 4 KiB into the first extent, through the hole, into the second.
        assert_eq!(
            device_ranges(Some(&layout), 0, 4096, 16384),
            vec![((1 << 20) + 4096, 4096), (5 << 20, 4096)]
        );
        // An unmapped file keeps its file offsets.
        assert_eq!(device_ranges(Some(&layout), 1, 7, 9), vec![(7, 9)]);
        assert_eq!(device_ranges(None, 0, 7, 9), vec![(7, 9)]);
    }

    #[test]
    fn unaligned_io_spans_an_extra_unit() {
        let st = Stripe::parse("64k:4").unwrap();
        assert_eq!(st.pieces(60 * 1024, 8 * 1024), 2);
        assert_eq!(st.pieces(0, 64 * 1024), 1);
        let p = st.split(60 * 1024, 8 * 1024);
        assert_eq!(p, vec![(0, 60 * 1024, 4096), (1, 0, 4096)]);
        // The fifth unit wraps to column 0 one stripe further down.
        assert_eq!(st.split(256 * 1024, 10), vec![(0, 64 * 1024, 10)]);
        assert!(Stripe::parse("64k").is_err());
        assert!(Stripe::parse("0:3").is_err());
        assert!(Stripe::parse("64k:0").is_err());
    }

    proptest::proptest! {
        #[test]
        fn column_counts_match_the_listed_split(
            unit in 1u64..5000, cols in 1u32..9,
            ios in proptest::collection::vec((0u64..100_000, 0u64..40_000), 0..20)
        ) {
            let st = Stripe { unit_bytes: unit, columns: cols };
            let mut cc = ColumnCounts::new(&st).unwrap();
            let mut want = vec![0u64; cols as usize];
            for (o, l) in ios {
                let parts = st.split(o, l);
                for p in &parts {
                    want[p.0 as usize] += 1;
                }
                proptest::prop_assert_eq!(cc.add(&st, o, l), parts.len() as u64);
            }
            proptest::prop_assert_eq!(cc.finish(), want);
        }
    }

    #[test]
    fn huge_stripe_is_refused_with_an_estimate_and_huge_ios_are_counted_not_listed() {
        let mut t = Trace::default();
        t.file_index("/f");
        t.records = vec![rec(0, TraceOp::Read, 0, 1 << 30, 0, 10)];
        // 2^32 - 1 columns would take 64 GiB of counters: refused, not an allocator abort.
        let e = Stripe::parse("1:4294967295").unwrap_err();
        assert!(e.0.contains("would need about"), "{e}");
        // 10^8 columns: refused with what it would take and print, and the cap.
        let e = Stripe::parse("1:100000000").unwrap_err().0;
        assert!(
            e.contains("7.45 GiB") && e.contains("190.73 MiB") && e.contains("at most 65536"),
            "{e}"
        );
        assert!(Stripe::parse("1:65536").is_ok());
        // A 1 GiB read over a 1-byte stripe unit: 2^30 pieces counted in constant time.
        let st = Stripe::parse("1:3").unwrap();
        let a = analyze(&t, 1 << 20, Some(st)).unwrap();
        let rep = a.stripe.unwrap();
        assert_eq!(rep.device_ios, 1 << 30);
        assert_eq!(rep.per_column_ios.iter().sum::<u64>(), 1 << 30);
    }

    #[test]
    fn sequential_random_mix_and_concurrency() {
        let mut t = Trace::default();
        t.file_index("/f");
        t.records = vec![
            rec(0, TraceOp::Read, 0, 4096, 0, 10),
            rec(1, TraceOp::Read, 4096, 4096, 10, 20),
            rec(2, TraceOp::Write, 1 << 20, 8192, 15, 30),
            rec(3, TraceOp::Read, 8192, 4096, 40, 50),
        ];
        let a = analyze(&t, 1 << 20, None).unwrap();
        assert_eq!((a.reads, a.writes), (3, 1));
        assert_eq!((a.first, a.sequential, a.random), (1, 1, 2));
        assert_eq!(a.max_in_flight, 2);
        assert_eq!(a.sizes.len(), 2);
        assert_eq!(a.files[0].hot_regions[0].ops, 3);
    }
}
