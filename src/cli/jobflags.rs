//! The Job flags `run`, `sweep` and `suite` share (`#[command(flatten)]`): how the I/O is
//! done (open flags, advice, reservations, rate limits, io_uring options), what happens to
//! the cache and the files around it, and data checking. Declared once, so each is spelled,
//! documented and read the same way in every command, and a hint that names one of them
//! (`add --fsync`, `--drop-cache`) names a flag every Job-running command takes.
//!
//! The access pattern, sizes, counts and times are not here: `run` takes one value of each,
//! `sweep` a list (an axis), `suite` the suite's own.

use super::args::{HOW, MEASURE, SAFETY, WHAT};
use clap::Args;

/// Help heading: writing self-checking data and reading it back.
pub(crate) const CHECKING: &str = "Data checking";

#[derive(Args, Debug, Default, Clone)]
pub(crate) struct JobFlags {
    /// Repeat the I/O loop N times [default: 1]
    #[arg(long, value_name = "N", help_heading = WHAT)]
    pub nrep: Option<u32>,
    /// End the run once its rate settles: iops|bw|lat:LIMIT%[:slope]:WINDOW
    ///
    /// Every second the run takes one sample of all workers' IOPS, bandwidth or mean
    /// latency; once the last WINDOW of samples spread (max - min) by at most LIMIT % of
    /// their mean, or with :slope their least-squares slope per second is at most LIMIT %
    /// of the mean, the run stops. The Result says whether and when it settled.
    #[arg(long = "steady-state", value_name = "SPEC", help_heading = WHAT)]
    pub steady_state: Option<String>,
    /// With --steady-state: the longest the run goes on unsettled [default: --time]
    #[arg(long = "steady-state-max", value_name = "DUR", help_heading = WHAT)]
    pub steady_state_max: Option<String>,
    /// Seed for random offsets
    #[arg(long, value_name = "N", help_heading = WHAT)]
    pub seed: Option<u64>,
    /// Warm up this long first (2s), left out of the Result; --time counts after it
    ///
    /// The warm-up's I/O runs like the rest (fio's ramp_time); the counters, histograms,
    /// system calls, CPU time and intervals start when it ends, and the Result says so.
    #[arg(long, value_name = "DUR", help_heading = WHAT)]
    pub ramp: Option<String>,
    /// Warm up until each thread has moved SIZE bytes (64m), left out of the Result
    ///
    /// Bytes read, written and trimmed count; the warm-up ends with the I/O that completes
    /// the thread's SIZE-th byte, and --time counts after it. A run bounded by --count or
    /// --size does its warm-up within that count, so its Result holds SIZE bytes less per
    /// thread. Not with --ramp or --steady-state.
    #[arg(long = "ramp-bytes", value_name = "SIZE", help_heading = WHAT)]
    pub ramp_bytes: Option<String>,
    /// Which blocks random I/O favours: uniform, zipf:T, pareto:H, normal:S%, zoned
    /// [default: uniform]
    ///
    /// zipf:T draws the block of popularity rank k with weight 1/k^T; pareto:H puts H of the
    /// I/Os on the hottest 1-H of the blocks; normal:S% centres them on the middle of the
    /// file with a standard deviation of S % of it; zoned:P/R:P/R... puts P % of the I/Os in
    /// the next R % of the file.
    #[arg(long, value_name = "SPEC", help_heading = WHAT)]
    pub distribution: Option<String>,
    /// Mixed I/O sizes: SIZE/PCT:SIZE/PCT..., or READS,WRITES[,TRIMS] lists [default: --bs]
    ///
    /// Each I/O of a direction takes one of its sizes, in the given shares (which add up to
    /// 100 per list), e.g. 4k/60:64k/30:1m/10 or 4k/50:8k/50,64k/100. The Result splits
    /// the operations and latency by size (`by_size`).
    #[arg(long, value_name = "SPLIT", help_heading = WHAT)]
    pub bssplit: Option<String>,
    /// Sizes drawn from MIN-MAX, or READS,WRITES[,TRIMS] ranges [default: --bs]
    ///
    /// As fio draws them: a byte count uniform in [MIN, MIN+MAX), rounded down to a multiple
    /// of --block-align (else of MIN), at most MAX. Each multiple below MAX is as likely, and
    /// so is MAX if it is one (4k-16k: 4k, 8k, 12k, 16k alike); if not, MAX takes the rest.
    /// E.g. 4k-64k or 4k-16k,64k-256k. The Result splits the figures by size (`by_size`).
    #[arg(long, value_name = "RANGE", help_heading = WHAT)]
    pub bsrange: Option<String>,
    /// Random offsets are multiples of SIZE [default: the smallest I/O size]
    #[arg(long = "block-align", value_name = "SIZE", help_heading = WHAT)]
    pub block_align: Option<String>,
    /// Sequential access: skip SIZE after each I/O, leaving holes (fio's rw=read:SIZE)
    /// [default: 0]
    ///
    /// A pass over the file then takes fewer I/Os: one every I/O size + SIZE bytes.
    #[arg(long, value_name = "SIZE", help_heading = WHAT)]
    pub skip: Option<String>,
    /// Random access: N I/Os in a row from each random offset (fio's rw=randread:N)
    /// [default: 1]
    ///
    /// The first I/O of a run goes to a random offset, the next N-1 follow it sequentially
    /// (a run that reaches the end of the file ends there). Not with --random-map.
    #[arg(long = "random-run", value_name = "N", help_heading = WHAT)]
    pub random_run: Option<u64>,
    /// With --random-run N: every I/O of a run at its random offset [default: off]
    ///
    /// The N I/Os of a run repeat the offset drawn for it instead of following on
    /// sequentially (fio's rw_sequencer=identical).
    #[arg(long = "run-same-offset", help_heading = WHAT)]
    pub run_same_offset: bool,
    /// Random access: each thread draws offsets in its own slice of the file [default: off]
    ///
    /// The file is cut into one slice per thread, as sequential threads cut it, instead of
    /// every thread drawing over the whole file (fio's clones with offset_increment).
    #[arg(long = "random-slices", help_heading = WHAT)]
    pub random_slices: bool,
    /// Random I/O touches every block exactly once per pass (per thread) [default: off]
    ///
    /// Instead of drawing with replacement; off by default because a map costs memory and
    /// time per I/O.
    #[arg(long = "random-map", help_heading = WHAT)]
    pub random_map: bool,
    /// Bytes of every write, made anew for it: zero, random, or 0xHEX repeated
    ///
    /// The data options take writes. With --verify each block keeps its 64-byte verify
    /// header (checked by the CRC32C it carries) and the shape fills the rest of the block;
    /// the Result measures the shape with the header counted.
    /// [default: random bytes made once per buffer]
    #[arg(long = "buffer-pattern", value_name = "zero|random|0xHEX", help_heading = HOW)]
    pub buffer_pattern: Option<String>,
    /// Each written block compresses by about PCT % (measured after the run)
    ///
    /// Random bytes, then a run of zeros (or of --buffer-pattern's bytes), per 4 KiB.
    #[arg(long = "buffer-compress", value_name = "PCT", help_heading = HOW)]
    pub buffer_compress: Option<String>,
    /// PCT % of written blocks repeat an earlier block (measured after the run)
    #[arg(long, value_name = "PCT", help_heading = HOW)]
    pub dedupe: Option<String>,
    /// Where --dedupe's repeated blocks come from: repeat, working-set [default: repeat]
    ///
    /// repeat: a few blocks shared by every thread, written again and again. working-set: a
    /// set of distinct blocks, --dedupe-working-set % of the file's blocks, taken in turn;
    /// its first copies are unique, so the writes drawn from it are PCT % plus the set's
    /// share, and one pass over the file holds PCT % duplicates.
    #[arg(long = "dedupe-mode", value_name = "MODE", help_heading = HOW)]
    pub dedupe_mode: Option<String>,
    /// With --dedupe-mode working-set: the set's share of the file's blocks, 1-100 [default: 5]
    #[arg(long = "dedupe-working-set", value_name = "PCT", help_heading = HOW)]
    pub dedupe_working_set: Option<String>,
    /// Pause each thread for DUR after every BLOCKS of its I/Os [default BLOCKS: 1]
    ///
    /// Like an application that computes between requests: the pause is not part of any
    /// I/O's latency, and counts in the run's time (so in its throughput). With a queue
    /// depth, the thread lets its I/Os in flight complete before it pauses.
    #[arg(long, value_name = "DUR[:BLOCKS]", help_heading = HOW)]
    pub think: Option<String>,
    /// Run users as processes: per-user or per-thread
    #[arg(long, value_name = "HOW", help_heading = HOW)]
    pub processes: Option<String>,
    /// fsync each file after writing it (timed)
    #[arg(long, help_heading = HOW)]
    pub fsync: bool,
    /// Open with O_SYNC
    #[arg(long, help_heading = HOW)]
    pub sync: bool,
    /// Open with O_DSYNC
    #[arg(long, help_heading = HOW)]
    pub dsync: bool,
    /// Open with O_APPEND
    #[arg(long, help_heading = HOW)]
    pub append: bool,
    /// Truncate the file before the run
    #[arg(long, help_heading = HOW)]
    pub trunc: bool,
    /// posix_fadvise advice: noreuse, random, seq (comma-separated)
    #[arg(long, value_name = "ADVICE", help_heading = HOW)]
    pub advise: Option<String>,
    /// Extent size hint (XFS)
    #[arg(long, value_name = "SIZE", help_heading = HOW)]
    pub extsize: Option<String>,
    /// Reserve space with fallocate
    #[arg(long, value_name = "SIZE", help_heading = HOW)]
    pub reserve: Option<String>,
    /// Reservation flags: align, chgsiz, contig, noextend, noreserve, trim
    #[arg(long = "space-flags", value_name = "FLAGS", help_heading = HOW)]
    pub space_flags: Option<String>,
    /// Pin the workers to these CPUs (0-1,3; online CPUs only) [default: not pinned]
    ///
    /// Each worker thread is bound before the start; the Result's host section then judges
    /// what else ran on these CPUs.
    #[arg(long, value_name = "LIST", help_heading = HOW)]
    pub cpus: Option<String>,
    /// mlock the I/O buffers
    #[arg(long, help_heading = HOW)]
    pub mlock: bool,
    #[command(flatten)]
    pub rate: super::args::RateArgs,
    /// Spacing of a rate's I/Os: linear (even) or poisson (exponential gaps) [default: linear]
    #[arg(long = "rate-process", value_name = "PROCESS", help_heading = HOW)]
    pub rate_process: Option<String>,
    /// Fail the run when a worker moves fewer bytes/s in a cycle (fio's rate_min)
    ///
    /// Judged in every direction the worker issues, once per cycle after a 2-second settle,
    /// as fio's rate_min; the Result says which cycle fell below what.
    #[arg(long = "rate-min", value_name = "SIZE", help_heading = HOW)]
    pub rate_min: Option<String>,
    /// Fail the run when a worker does fewer I/Os/s in a cycle (fio's rate_iops_min)
    #[arg(long = "rate-iops-min", value_name = "N", help_heading = HOW)]
    pub rate_iops_min: Option<String>,
    /// The cycle --rate-min and --rate-iops-min judge [default: 1s]
    #[arg(long = "rate-cycle", value_name = "DUR", help_heading = HOW)]
    pub rate_cycle: Option<String>,
    /// io_uring SQ polling
    #[arg(long, help_heading = HOW)]
    pub sqpoll: bool,
    /// io_uring polled completions
    #[arg(long, help_heading = HOW)]
    pub hipri: bool,
    /// Drop caches before the run (targets always; globally when root)
    #[arg(long = "drop-cache", help_heading = MEASURE)]
    pub drop_cache: bool,
    /// Do not evict the targets' cached pages before timing (hot-cache runs)
    #[arg(long = "no-invalidate", help_heading = MEASURE)]
    pub no_invalidate: bool,
    /// Remove each file after the run, even one kept earlier
    #[arg(long, help_heading = SAFETY)]
    pub remove: bool,
    /// Write self-describing blocks, check reads of them, and read back every written block
    #[arg(long, help_heading = CHECKING)]
    pub verify: bool,
    /// With --verify: every N completed writes of a thread, read those blocks back and check them
    #[arg(long = "verify-backlog", value_name = "N", help_heading = CHECKING)]
    pub verify_backlog: Option<String>,
    /// fsync a thread's files after every N writes it issued (with --verify: acknowledges them)
    #[arg(long = "fsync-every", value_name = "N", help_heading = CHECKING)]
    pub fsync_every: Option<String>,
    /// fdatasync a thread's files after every N writes it issued
    #[arg(long = "fdatasync-every", value_name = "N", help_heading = CHECKING)]
    pub fdatasync_every: Option<String>,
}

impl JobFlags {
    /// The flags given, as (Job parameter, value) in the order they apply: the names of
    /// `crate::job::params`, whose table does the one conversion to the Job.
    pub(crate) fn settings(&self) -> Vec<(&'static str, String)> {
        let n = |v: Option<u64>| v.map(|x| x.to_string());
        let valued = [
            ("nrep", n(self.nrep.map(u64::from))),
            ("seed", n(self.seed)),
            ("ramp", self.ramp.clone()),
            ("ramp_bytes", self.ramp_bytes.clone()),
            ("steady_state", self.steady_state.clone()),
            ("steady_state_max", self.steady_state_max.clone()),
            ("distribution", self.distribution.clone()),
            ("bssplit", self.bssplit.clone()),
            ("bsrange", self.bsrange.clone()),
            ("block_align", self.block_align.clone()),
            ("skip", self.skip.clone()),
            ("random_run", n(self.random_run)),
            ("buffer_pattern", self.buffer_pattern.clone()),
            ("buffer_compress", self.buffer_compress.clone()),
            ("dedupe", self.dedupe.clone()),
            ("dedupe_mode", self.dedupe_mode.clone()),
            ("dedupe_working_set", self.dedupe_working_set.clone()),
            ("think", self.think.clone()),
            ("processes", self.processes.clone()),
            ("advise", self.advise.clone()),
            ("extsize", self.extsize.clone()),
            ("reserve", self.reserve.clone()),
            ("space_flags", self.space_flags.clone()),
            ("cpus", self.cpus.clone()),
            ("rate_iops", self.rate.rate_iops.clone()),
            ("rate_bytes", self.rate.rate_bytes.clone()),
            ("rate_scope", self.rate.rate_scope.clone()),
            ("rate_process", self.rate_process.clone()),
            ("rate_min", self.rate_min.clone()),
            ("rate_iops_min", self.rate_iops_min.clone()),
            ("rate_cycle", self.rate_cycle.clone()),
            ("verify_backlog", self.verify_backlog.clone()),
            ("fsync_every", self.fsync_every.clone()),
            ("fdatasync_every", self.fdatasync_every.clone()),
        ];
        // Each switch given turns its parameter on (off for --no-invalidate); one not given
        // leaves the job file's or the suite's value.
        let switches = [
            ("fsync", self.fsync, "true"),
            ("sync", self.sync, "true"),
            ("dsync", self.dsync, "true"),
            ("append", self.append, "true"),
            ("trunc", self.trunc, "true"),
            ("mlock", self.mlock, "true"),
            ("sqpoll", self.sqpoll, "true"),
            ("hipri", self.hipri, "true"),
            ("drop_cache", self.drop_cache, "true"),
            ("remove", self.remove, "true"),
            ("invalidate", self.no_invalidate, "false"),
            ("verify", self.verify, "true"),
            ("random_map", self.random_map, "true"),
            ("run_same_offset", self.run_same_offset, "true"),
            ("random_slices", self.random_slices, "true"),
        ];
        let mut out: Vec<(&'static str, String)> = valued
            .into_iter()
            .filter_map(|(name, v)| v.map(|v| (name, v)))
            .collect();
        out.extend(
            switches
                .into_iter()
                .filter(|(_, given, _)| *given)
                .map(|(name, _, v)| (name, v.to_string())),
        );
        out
    }

    /// Every parameter this group can set (given or not), for the table check.
    #[cfg(test)]
    pub(crate) fn names() -> Vec<&'static str> {
        let all = JobFlags {
            nrep: Some(1),
            seed: Some(1),
            steady_state: Some(String::new()),
            steady_state_max: Some(String::new()),
            think: Some(String::new()),
            processes: Some(String::new()),
            advise: Some(String::new()),
            extsize: Some(String::new()),
            reserve: Some(String::new()),
            space_flags: Some(String::new()),
            cpus: Some(String::new()),
            rate: super::args::RateArgs {
                rate_iops: Some(String::new()),
                rate_bytes: Some(String::new()),
                rate_scope: Some(String::new()),
            },
            rate_process: Some(String::new()),
            rate_min: Some(String::new()),
            rate_iops_min: Some(String::new()),
            rate_cycle: Some(String::new()),
            verify_backlog: Some(String::new()),
            fsync_every: Some(String::new()),
            fdatasync_every: Some(String::new()),
            fsync: true,
            sync: true,
            dsync: true,
            append: true,
            trunc: true,
            mlock: true,
            sqpoll: true,
            hipri: true,
            drop_cache: true,
            remove: true,
            no_invalidate: true,
            verify: true,
            ramp: Some(String::new()),
            ramp_bytes: Some(String::new()),
            distribution: Some(String::new()),
            bssplit: Some(String::new()),
            bsrange: Some(String::new()),
            block_align: Some(String::new()),
            skip: Some(String::new()),
            random_run: Some(0),
            random_map: true,
            run_same_offset: true,
            random_slices: true,
            buffer_pattern: Some(String::new()),
            buffer_compress: Some(String::new()),
            dedupe: Some(String::new()),
            dedupe_mode: Some(String::new()),
            dedupe_working_set: Some(String::new()),
        };
        all.settings().into_iter().map(|(n, _)| n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::params;

    /// Every flag of the group names a parameter of the table, under the flag the table
    /// records for it: what `run --help` documents is what the table sets.
    #[test]
    fn every_flag_names_a_table_parameter() {
        let names = JobFlags::names();
        assert_eq!(names.len(), 49);
        for n in names {
            let p = params::find(n).unwrap_or_else(|| panic!("{n} not in the table"));
            assert!(p.flag.is_some(), "{n} has no run flag in the table");
        }
    }
}
