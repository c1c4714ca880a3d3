//! The statistics of `--repeat` and `fsbench ab` judged on runs whose truth is known: the
//! runner prepares a real file and drives the mock engine through its one loop, and the ops
//! take seeded, noisy service times on a virtual clock (`engine::mock::Service`), so every
//! figure is measured the way a real run's is (loop, Result, headline figures) while the
//! noise is injected and reproducible. For each of 100 seeds:
//!
//! - `ab` of A against an identical A finds "within noise" in at least 95;
//! - `ab` of A against a B whose ops take 20 % longer finds B slower in at least 95, on IOPS
//!   and on mean latency, and the same rounds judged the other way round find A faster;
//! - the `--repeat` summary's interval of the median tells the true median from one 20 %
//!   lower in at least 95, and holds the true median in at least 90 (the percentile bootstrap
//!   of the median of 10 runs holds it about 93 % of the time, a little under its nominal
//!   95 %).
//!
//! The noise is what a shared machine does: every run is slowed or sped up as a whole by a
//! log-normal factor (5 %), the two runs of an `ab` round share a factor of their own (10 %:
//! a neighbour that slows both), and every op takes a log-normal time of its own (30 %).

use crate::engine::mock::{log_normal, MockEngine, Script, Service};
use crate::job::{Access, Job};
use crate::result::RunResult;
use crate::runner::{live::Watching, worker::Worker, Plan};
use crate::runner::{mark::FileId, worker::verify::VerifyShared};
use crate::stats::bootstrap::Rng;
use crate::stats::clock::Clock;
use std::sync::Arc;

/// Median service time of an op of A, in nanoseconds (10 000 IOPS at depth 1).
const BASE_NS: f64 = 100_000.0;
/// Ops per run.
const OPS: u64 = 200;
/// Spread (sigma of the log) of a run's factor, of a round's shared factor, of an op's time.
const RUN_SIGMA: f64 = 0.05;
const ROUND_SIGMA: f64 = 0.10;
const OP_SIGMA: f64 = 0.30;
const SEEDS: u64 = 100;
const ROUNDS: usize = 8;
const REPEATS: u32 = 10;

/// Runs of a small random-read job on a file of its own, which the first run lays out and
/// the later ones use as it is (as `--repeat` and `ab` do).
struct Bench {
    _dir: tempfile::TempDir,
    job: Job,
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            targets: vec![dir.path().join("data")],
            access: Access::RandRead,
            block_size: 4096,
            file_size: Some(64 << 10),
            io_count: Some(OPS),
            ..Default::default()
        };
        Bench {
            _dir: dir,
            job: crate::cli::repeat::SameFiles::job(&job),
        }
    }

    /// One run through the runner whose ops take `median_ns` each (times their jitter,
    /// drawn from `seed`), as its Result.
    fn run(&self, median_ns: f64, seed: u64) -> anyhow::Result<RunResult> {
        let prepare = move |job: &Job,
                            plan: &Plan,
                            _: Option<FileId>,
                            user: usize,
                            thread: u32,
                            _: Option<&Arc<VerifyShared>>| {
            let (clock, now) = Clock::virtual_at(1 << 40);
            let service = Service {
                clock: now,
                median_ns,
                jitter: OP_SIGMA,
                seed: seed ^ ((user as u64) << 32) ^ thread as u64,
            };
            let script = Script {
                depth: job.queue_depth,
                service: Some(service),
                ..Default::default()
            };
            let (engine, _) = MockEngine::new(script, job.block_size as usize);
            let size = plan.targets[user].size;
            let mut w = Worker::with_engine(job, size, user, thread, Box::new(engine))?;
            w.set_clock(clock);
            Ok(w)
        };
        // Other tests of this process start child processes; a child forked while this run
        // held the file's lock holds it too until it execs. That is this test process's
        // doing, not the run's: try again shortly.
        let mut tries = 0;
        let outcome = loop {
            match crate::runner::run_with_workers(&self.job, &Watching::default(), prepare) {
                Err(e) if tries < 50 && e.to_string().contains("is in use by another") => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => break r?,
            }
        };
        Ok(RunResult::from_outcome(&self.job, &outcome))
    }
}

/// The generator of seed `seed`'s noise.
fn noise(seed: u64) -> Rng {
    let mut r = Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5eed);
    r.next_u64();
    r
}

/// `fsbench ab`'s rounds and verdicts (the same functions) of A against a B whose ops take
/// `effect` times as long, for one seed: the verdicts on IOPS and on mean latency, of B
/// against A and of A against B.
fn ab_verdicts(bench: &Bench, seed: u64, effect: f64) -> [[String; 2]; 2] {
    let mut rng = noise(seed);
    let mut round_factor = 1.0;
    let mut runs = 0;
    let rounds = crate::cli::ab::rounds(ROUNDS, |side| {
        if runs % 2 == 0 {
            round_factor = log_normal(&mut rng, ROUND_SIGMA);
        }
        runs += 1;
        let side_effect = if side == 1 { effect } else { 1.0 };
        let median_ns = BASE_NS * side_effect * round_factor * log_normal(&mut rng, RUN_SIGMA);
        bench.run(median_ns, rng.next_u64())
    })
    .unwrap();
    assert_eq!(rounds.code, 0, "{:?}", rounds.notes);
    let [a, b] = &rounds.figures;
    assert_eq!((a.len(), b.len()), (ROUNDS, ROUNDS));
    [(a, b), (b, a)].map(|(a, b)| {
        let metrics = crate::ab::judge(a, b);
        ["iops", "lat_mean_ns"].map(|key| {
            metrics
                .iter()
                .find(|m| m.metric == key)
                .unwrap_or_else(|| panic!("no {key} judged"))
                .verdict
                .clone()
        })
    })
}

/// How many seeds gave each verdict.
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    faster: usize,
    slower: usize,
    within_noise: usize,
}

/// Over the seeds, how often each verdict came: [B against A, A against B] x [IOPS, mean
/// latency].
fn count_ab(effect: f64) -> [[Count; 2]; 2] {
    let bench = Bench::new();
    let mut counts = [[Count::default(); 2]; 2];
    for seed in 0..SEEDS {
        let verdicts = ab_verdicts(&bench, seed, effect);
        for (c, v) in counts.iter_mut().flatten().zip(verdicts.iter().flatten()) {
            match v.as_str() {
                "faster" => c.faster += 1,
                "slower" => c.slower += 1,
                "within noise" => c.within_noise += 1,
                other => panic!("verdict {other}"),
            }
        }
    }
    counts
}

#[test]
fn ab_finds_identical_configurations_within_noise() {
    let [b_vs_a, _] = count_ab(1.0);
    for (name, c) in ["iops", "lat_mean_ns"].iter().zip(b_vs_a) {
        assert!(c.within_noise >= 95, "{name}: {c:?} of {SEEDS}");
    }
}

#[test]
fn ab_finds_ops_20_percent_slower_and_the_other_way_faster() {
    let [b_vs_a, a_vs_b] = count_ab(1.2);
    for (name, c) in ["iops", "lat_mean_ns"].iter().zip(b_vs_a) {
        assert!(c.slower >= 95, "{name}, B against A: {c:?} of {SEEDS}");
    }
    for (name, c) in ["iops", "lat_mean_ns"].iter().zip(a_vs_b) {
        assert!(c.faster >= 95, "{name}, A against B: {c:?} of {SEEDS}");
    }
}

#[test]
fn repeat_interval_tells_20_percent_and_mostly_holds_the_true_median() {
    let bench = Bench::new();
    // A run's IOPS is OPS over the sum of its ops' times: the median run (factor 1) has
    // ops of mean time BASE_NS * exp(OP_SIGMA^2 / 2), the log-normal's mean.
    let true_iops = 1e9 / (BASE_NS * (OP_SIGMA * OP_SIGMA / 2.0).exp());
    let (mut holds, mut tells) = (0, 0);
    for seed in 0..SEEDS {
        let mut rng = noise(seed);
        let r = crate::cli::repeat::repeated(REPEATS, || {
            let median_ns = BASE_NS * log_normal(&mut rng, RUN_SIGMA);
            bench.run(median_ns, rng.next_u64())
        })
        .unwrap();
        let report = r.repeat.expect("a repeat summary");
        assert_eq!(report.runs.len(), REPEATS as usize);
        let s = report.summary.iter().find(|s| s.metric == "iops").unwrap();
        let median = crate::stats::bootstrap::median(&report.values("iops").unwrap()).unwrap();
        assert_eq!(s.median, median);
        holds += usize::from(s.ci95_low <= true_iops && true_iops <= s.ci95_high);
        tells += usize::from(s.ci95_low > true_iops / 1.2);
    }
    assert!(
        holds >= 90,
        "the interval held the true median in {holds} of {SEEDS}"
    );
    assert!(
        tells >= 95,
        "the interval told a 20 % slower setting in {tells} of {SEEDS}"
    );
}
