//! The worker loop driven by the scripted engine: stop conditions, pacing, errors and partial
//! results, with exact counts (no files).

use super::*;
use crate::engine::mock::{Log, MockEngine, Outcome, Script};
use crate::job::{Access, RateLimit, RateScope};
use std::sync::Arc;

const BS: u64 = 4096;
const SIZE: u64 = 1 << 20;

fn job(access: Access) -> Job {
    Job {
        targets: vec!["mock".into()],
        access,
        block_size: BS,
        ..Default::default()
    }
}

/// Run one worker of `job` on the scripted engine; returns its outcome, the engine's log,
/// and whether `stop` was raised.
fn drive(job: &Job, mut script: Script) -> (ThreadOutcome, Log, bool) {
    script.log = true;
    if script.depth == 0 {
        script.depth = job.queue_depth;
    }
    let (engine, log) = MockEngine::new(script, job.block_size as usize);
    let w = Worker::with_engine(job, SIZE, 0, 0, Box::new(engine)).unwrap();
    let stop = AtomicBool::new(false);
    let interrupt = AtomicBool::new(false);
    let out = w.run_until(&stop, &interrupt);
    let log = std::mem::take(&mut *log.lock().unwrap());
    (out, log, stop.load(Ordering::SeqCst))
}

/// The offsets the job's generator issues, in order (what the engine must have seen).
fn planned_offsets(job: &Job) -> Vec<u64> {
    let mut c = Core::new(
        job,
        SIZE,
        0,
        0,
        String::new(),
        RouteRule::new(job.cache, job.block_size, 1),
        None,
        SyscallCounts::default(),
        None,
        None,
    );
    std::iter::from_fn(|| c.gen.next_op().map(|(_, o, _)| o)).collect()
}

fn offsets(log: &Log) -> Vec<u64> {
    log.ops.iter().map(|(op, _)| op.offset).collect()
}

#[test]
fn stops_at_the_ops_count_times_repeats() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(100);
    j.repeats = 3;
    let (out, log, stop) = drive(&j, Script::default());
    let s = &out.stats;
    assert!(out.failure.is_none());
    assert_eq!((s.read_ops, s.write_ops, s.errors), (300, 0, 0));
    assert_eq!(s.read_bytes, 300 * BS);
    assert_eq!(s.lat_count(), 300);
    assert_eq!(
        s.inflight[0], 300,
        "queue depth 1: every I/O alone in flight"
    );
    assert_eq!(offsets(&log), planned_offsets(&j));
    assert_eq!(log.ops.len(), 300);
    assert_eq!(log.flushes, 0, "a read job does not flush");
    assert!(!stop, "a complete worker does not stop the others");
}

#[test]
fn a_sequential_pass_stops_after_the_target_bytes() {
    // No count, no time: one pass over the target, every block exactly once.
    let j = job(Access::Read);
    let (out, log, _) = drive(&j, Script::default());
    assert_eq!(out.stats.read_ops, SIZE / BS);
    assert_eq!(out.stats.read_bytes, SIZE);
    let want: Vec<u64> = (0..SIZE / BS).map(|b| b * BS).collect();
    assert_eq!(offsets(&log), want);
}

#[test]
fn stops_at_the_deadline_and_counts_what_completed() {
    let mut j = job(Access::RandRead);
    j.time_s = Some(0.2);
    j.queue_depth = 4;
    let script = Script {
        latency: Duration::from_millis(2),
        ..Default::default()
    };
    let (out, log, _) = drive(&j, script);
    let s = &out.stats;
    assert!(out.failure.is_none());
    assert!(s.elapsed_s >= 0.2, "elapsed {}", s.elapsed_s);
    // Everything submitted was completed and counted; nothing was issued after the
    // deadline (the last batch went out before it).
    assert_eq!(s.read_ops, log.ops.len() as u64);
    assert_eq!(s.lat_count(), s.read_ops);
    let first = log.ops[0].1;
    let last = log.ops.last().unwrap().1;
    assert!(last.duration_since(first) < Duration::from_millis(200));
    // At most 4 in flight, each 2 ms: at most 4 x 100 I/Os fit in 0.2 s.
    assert!(s.read_ops > 0 && s.read_ops <= 4 * 101, "{}", s.read_ops);
    assert!(
        s.lat().summary().min >= 2_000_000,
        "latency below the scripted 2 ms"
    );
}

#[test]
fn an_error_stops_the_run_and_keeps_what_completed() {
    // Depth 4, all ops of a batch complete together: ops 0-3, then 4-7 of which op 5
    // fails. The failed op is not counted; 4, 6 and 7 were in flight and are.
    let mut j = job(Access::RandRead);
    j.io_count = Some(1000);
    j.queue_depth = 4;
    let script = Script {
        outcomes: vec![(5, Outcome::Errno(libc::EIO))],
        ..Default::default()
    };
    let (out, log, stop) = drive(&j, script);
    let f = out.failure.expect("a failure");
    assert_eq!(f.offset, Some(planned_offsets(&j)[5]));
    assert!(f.message.contains("read failed"), "{}", f.message);
    assert_eq!(f.path, "mock");
    assert_eq!((out.stats.read_ops, out.stats.errors), (7, 1));
    assert_eq!(out.stats.read_bytes, 7 * BS);
    assert_eq!(log.ops.len(), 8, "nothing issued after the error");
    assert!(stop, "the other workers are told to stop");
}

#[test]
fn end_of_file_is_an_error_and_a_short_transfer_counts_its_bytes() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(10);
    let script = Script {
        outcomes: vec![(2, Outcome::Bytes(100)), (6, Outcome::Bytes(0))],
        ..Default::default()
    };
    let (out, _, _) = drive(&j, script);
    let f = out.failure.expect("end of file is a failure");
    assert!(f.message.contains("returned 0 bytes"), "{}", f.message);
    assert_eq!(f.offset, Some(planned_offsets(&j)[6]));
    assert_eq!((out.stats.read_ops, out.stats.errors), (6, 1));
    assert_eq!(out.stats.read_bytes, 5 * BS + 100);
}

#[test]
fn enospc_on_a_write_is_named() {
    let mut j = job(Access::RandWrite);
    j.io_count = Some(10);
    let script = Script {
        outcomes: vec![(3, Outcome::Errno(libc::ENOSPC))],
        ..Default::default()
    };
    let (out, _, _) = drive(&j, script);
    let f = out.failure.unwrap();
    assert_eq!(f.message, "file system full (ENOSPC) on write");
    assert_eq!((out.stats.write_ops, out.stats.write_bytes), (3, 3 * BS));
}

#[test]
fn a_failed_submit_is_a_failure_and_its_ops_are_not_counted() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(10);
    let script = Script {
        submit_error_at: Some(4),
        ..Default::default()
    };
    let (out, log, stop) = drive(&j, script);
    let f = out.failure.unwrap();
    assert!(f.message.starts_with("submit: "), "{}", f.message);
    assert_eq!(f.offset, Some(planned_offsets(&j)[4]));
    assert_eq!(out.stats.read_ops, 4);
    assert_eq!(log.submit_calls, 5);
    assert!(stop);
}

#[test]
fn a_failed_reap_is_a_failure() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(10);
    let script = Script {
        reap_error_at: Some(3),
        ..Default::default()
    };
    let (out, _, stop) = drive(&j, script);
    assert!(out.failure.unwrap().message.starts_with("reap: "));
    assert_eq!(out.stats.read_ops, 3);
    assert!(stop);
}

#[test]
fn ops_an_engine_hands_back_are_issued_again_not_lost() {
    // The engine takes one op per call at depth 4: every planned op is still issued once,
    // in order, and the in-flight distribution says what really was in flight.
    let mut j = job(Access::RandRead);
    j.io_count = Some(50);
    j.queue_depth = 4;
    let script = Script {
        accept_at_most: Some(1),
        latency: Duration::from_micros(200),
        ..Default::default()
    };
    let (out, log, _) = drive(&j, script);
    assert!(out.failure.is_none());
    assert_eq!(out.stats.read_ops, 50);
    assert_eq!(offsets(&log), planned_offsets(&j));
    let slots: std::collections::HashSet<u32> = log.ops.iter().map(|(op, _)| op.slot).collect();
    assert!(slots.len() <= 4 && slots.iter().all(|&s| s < 4));
}

#[test]
fn in_flight_distribution_at_depth_four() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(8);
    j.queue_depth = 4;
    // Each batch of four completes together: two batches, each at depths 1, 2, 3, 4.
    let (out, _, _) = drive(&j, Script::default());
    assert_eq!(out.stats.read_ops, 8);
    assert_eq!(out.stats.inflight, [2, 2, 4, 0, 0, 0, 0, 0]);
}

#[test]
fn an_interrupt_stops_issuing_and_the_result_is_partial_not_failed() {
    let mut j = job(Access::RandRead);
    j.time_s = Some(60.0);
    let flag = Arc::new(AtomicBool::new(false));
    let (engine, log) = MockEngine::new(
        Script {
            depth: 1,
            log: true,
            raise_after: Some((41, flag.clone())),
            ..Default::default()
        },
        BS as usize,
    );
    let w = Worker::with_engine(&j, SIZE, 0, 0, Box::new(engine)).unwrap();
    let stop = AtomicBool::new(false);
    let out = w.run_until(&stop, &flag);
    // Op 41 was in flight when the interrupt came: it completes and counts, no more follow.
    assert!(out.failure.is_none());
    assert_eq!(out.stats.read_ops, 42);
    assert_eq!(log.lock().unwrap().ops.len(), 42);
    assert!(
        !stop.load(Ordering::SeqCst),
        "an interrupt is not a failure"
    );
    assert!(out.stats.elapsed_s < 30.0);
}

#[test]
fn another_workers_stop_ends_this_one() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(1_000_000);
    let stop = Arc::new(AtomicBool::new(false));
    let (engine, _) = MockEngine::new(
        Script {
            depth: 1,
            raise_after: Some((9, stop.clone())),
            ..Default::default()
        },
        BS as usize,
    );
    let w = Worker::with_engine(&j, SIZE, 0, 0, Box::new(engine)).unwrap();
    let out = w.run_until(&stop, &AtomicBool::new(false));
    assert!(out.failure.is_none());
    assert_eq!(out.stats.read_ops, 10);
}

#[test]
fn writes_are_flushed_once_and_a_failed_flush_fails_the_worker() {
    let mut j = job(Access::Write);
    j.io_count = Some(5);
    j.fsync = true;
    let (out, log, _) = drive(&j, Script::default());
    assert!(out.failure.is_none());
    assert_eq!((out.stats.write_ops, log.flushes), (5, 1));
    assert_eq!(out.stats.syscalls.fsync, 1);
    let (out, _, _) = drive(
        &j,
        Script {
            flush_errno: Some(libc::EIO),
            ..Default::default()
        },
    );
    assert!(out.failure.unwrap().message.starts_with("fsync failed"));
    assert_eq!(out.stats.write_ops, 5, "the writes still count");
}

/// `--fsync-every 4` at queue depth 8: each sync waits until nothing is in flight, and goes
/// before the next op once 4 writes were issued (none after the last), as fio's does.
#[test]
fn a_sync_every_n_writes_drains_the_queue_first() {
    let mut j = job(Access::RandWrite);
    j.io_count = Some(16);
    j.queue_depth = 8;
    j.engine = crate::job::EngineKind::Uring;
    j.fsync_every = Some(4);
    let (out, log, _) = drive(&j, Script::default());
    assert!(out.failure.is_none());
    assert_eq!(log.flushed_at, [(4, 0), (8, 0), (12, 0)]);
    assert_eq!((out.stats.write_ops, out.stats.other_ops), (16, 3));
    assert_eq!(out.stats.syscalls.fsync, 3);
    let (out, _, _) = drive(
        &j,
        Script {
            flush_errno: Some(libc::EIO),
            ..Default::default()
        },
    );
    assert!(out.failure.unwrap().message.starts_with("fsync failed"));
    assert_eq!(
        out.stats.write_ops, 4,
        "the writes before the failed sync count"
    );
}

#[test]
fn a_rate_limit_issues_on_an_absolute_schedule() {
    // 200 IOPS: I/O k is issued no earlier than k x 5 ms after the start.
    let mut j = job(Access::RandRead);
    j.io_count = Some(20);
    j.rate = RateLimit {
        iops: Some(200),
        bytes_per_sec: None,
        scope: RateScope::Thread,
        ..Default::default()
    };
    let (out, log, _) = drive(&j, Script::default());
    let s = &out.stats;
    assert_eq!(s.read_ops, 20);
    assert_eq!(
        s.sched_read_lat.len(),
        20,
        "schedule latency measured under a rate limit"
    );
    // Recorded once per I/O, in its direction only.
    assert_eq!(s.sched_write_lat.len(), 0);
    assert_eq!(s.sched_lat_count(), 20);
    let t0 = log.ops[0].1;
    for (k, (_, at)) in log.ops.iter().enumerate() {
        assert!(
            at.duration_since(t0) + Duration::from_millis(2) >= Duration::from_millis(5 * k as u64),
            "I/O {k} issued early"
        );
    }
    assert!(s.elapsed_s >= 0.095, "elapsed {}", s.elapsed_s);
}

#[test]
fn a_rate_limited_worker_that_falls_behind_counts_the_wait() {
    // 1000 IOPS asked, but every I/O takes 10 ms at depth 1: the schedule is not moved,
    // so I/O k waited at least k x 9 ms for its slot, and the schedule latency shows it
    // (no coordinated omission) while the service latency stays the I/O's own.
    let mut j = job(Access::RandRead);
    j.io_count = Some(10);
    j.rate = RateLimit {
        iops: Some(1000),
        bytes_per_sec: None,
        scope: RateScope::Thread,
        ..Default::default()
    };
    let script = Script {
        latency: Duration::from_millis(10),
        ..Default::default()
    };
    let (out, _, _) = drive(&j, script);
    let s = &out.stats;
    assert_eq!(s.read_ops, 10);
    // I/O 9 was due at 9 ms, issued after nine 10 ms I/Os and took 10 ms itself.
    assert!(
        s.sched_lat().summary().max >= 90_000_000,
        "sched {:?}",
        s.sched_lat().summary()
    );
    assert!(
        s.lat().summary().min >= 10_000_000,
        "service {:?}",
        s.lat().summary()
    );
    assert!(s.sched_lat().summary().min >= s.lat().summary().min);
}

#[test]
fn a_rate_limited_mixed_worker_keeps_the_schedule_latency_per_direction() {
    // Reads and writes under one rate limit: each I/O's schedule latency goes once into the
    // histogram of its direction, and their merge is the total.
    let mut j = job(Access::RandRw);
    j.read_pct = 50;
    j.io_count = Some(40);
    j.rate = RateLimit {
        iops: Some(2000),
        bytes_per_sec: None,
        scope: RateScope::Thread,
        ..Default::default()
    };
    let (out, _, _) = drive(&j, Script::default());
    let s = &out.stats;
    assert_eq!(s.read_ops + s.write_ops, 40);
    assert!(
        s.read_ops > 0 && s.write_ops > 0,
        "{} {}",
        s.read_ops,
        s.write_ops
    );
    assert_eq!(s.sched_read_lat.len(), s.read_ops);
    assert_eq!(s.sched_write_lat.len(), s.write_ops);
    assert_eq!(s.sched_other_lat.len(), 0);
    assert_eq!(s.sched_lat().len(), 40);
    let r = crate::stats::StatsReport::from_stats(s, false);
    assert_eq!(r.read.sched_lat_ns.count, s.read_ops);
    assert_eq!(r.write.sched_lat_ns.count, s.write_ops);
    assert_eq!(r.sched_lat_ns.count, 40);
    assert_eq!(
        r.sched_lat_ns.max,
        r.read.sched_lat_ns.max.max(r.write.sched_lat_ns.max)
    );
}

#[test]
fn without_a_rate_limit_there_is_one_latency() {
    let mut j = job(Access::RandRead);
    j.io_count = Some(10);
    let (out, _, _) = drive(&j, Script::default());
    assert_eq!(out.stats.lat_count(), 10);
    assert_eq!(out.stats.sched_lat_count(), 0);
}

#[test]
fn route_rule_agrees_with_the_policy() {
    let policies = [
        CachePolicy::Buffered,
        CachePolicy::Dsync,
        CachePolicy::Direct,
        CachePolicy::Concurrent,
        CachePolicy::Raw,
        CachePolicy::Discovered { threshold: 8192 },
        CachePolicy::Discovered { threshold: 1 },
    ];
    let mut rules = std::collections::HashSet::new();
    for policy in policies {
        for bs in [512u64, 1000, 4096, 6144, 8192, 65536] {
            for align in [1u64, 512, 4096, 3000] {
                let rule = RouteRule::new(policy, bs, align);
                rules.insert(format!("{:?}", std::mem::discriminant(&rule)));
                for k in 0..64u64 {
                    for off in [k * bs, k * 512, k * 4096 + 100, k * 1000] {
                        assert_eq!(
                            rule.route(off, bs),
                            policy.route(off, bs, align),
                            "{policy:?} bs {bs} align {align} offset {off}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(rules.len(), 3, "every kind of rule was exercised");
}

/// What the loop itself costs per I/O, and its two biggest parts: one clock reading and
/// one histogram record. Not a pass/fail test: run it to measure (docs/per-io-cost.md),
/// `taskset -c 1 cargo test --release --lib null_engine_overhead -- --ignored --nocapture`.
#[test]
#[ignore]
fn null_engine_overhead() {
    const N: u64 = 20_000_000;
    let cpu_ns = |f: &mut dyn FnMut()| {
        let u0 = cpu::thread_usage();
        f();
        cpu::thread_usage().since(&u0).cpu_s() * 1e9 / N as f64
    };
    let mut j = job(Access::RandRead);
    j.io_count = Some(N);
    for _ in 0..5 {
        let clock = cpu_ns(&mut || {
            let mut x = 0u64;
            for _ in 0..N {
                x = x.wrapping_add(crate::stats::mono_ns());
            }
            std::hint::black_box(x);
        });
        let mut h = crate::stats::LatencyHist::new();
        let mut v = 0x2545_f491_4f6c_dd1du64;
        let record = cpu_ns(&mut || {
            for _ in 0..N {
                // Latencies spread over 700..1723 ns, like page-cache reads.
                v ^= v << 13;
                v ^= v >> 7;
                v ^= v << 17;
                h.record(700 + (v & 1023));
            }
        });
        let (engine, _) = MockEngine::new(Script::default(), BS as usize);
        let w = Worker::with_engine(&j, 1 << 30, 0, 0, Box::new(engine)).unwrap();
        let out = w.run_until(&AtomicBool::new(false), &AtomicBool::new(false));
        let s = &out.stats;
        assert_eq!(s.read_ops, N);
        println!(
            "per I/O, CPU ns: null-engine loop {:.1} (wall {:.1}); one clock reading {:.1}; \
             one histogram record {:.1} (includes ~1 ns of xorshift)",
            s.usage.cpu_s() * 1e9 / N as f64,
            s.elapsed_s * 1e9 / N as f64,
            clock,
            record
        );
    }
}

/// Runner-level tests with the scripted engine: barrier, stop, status (no files).
mod with_mock {
    use crate::engine::mock::{MockEngine, Outcome, Script};
    use crate::job::Job;
    use crate::runner::*;
    use crate::runner::{mark, run_threads_spawning, settle, worker, Prepare};
    use crate::stats::Stats;
    use anyhow::Result;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn job(threads: u32) -> Job {
        Job {
            targets: vec!["a".into(), "b".into()],
            threads,
            access: crate::job::Access::RandRead,
            block_size: 4096,
            ..Default::default()
        }
    }

    fn plan(job: &Job) -> Plan {
        Plan {
            part: None,
            targets: Vec::new(),
            cache: job.cache,
            notes: Vec::new(),
        }
    }

    fn run_mock(job: &Job, prepare: Prepare, go: bool) -> Result<(Vec<ThreadOutcome>, f64)> {
        run_threads_spawning(
            job,
            &plan(job),
            &[],
            all_workers(job),
            |_| go,
            |b, f| b.spawn(f),
            prepare,
            None,
            &Default::default(),
        )
    }

    static PREPARED: AtomicUsize = AtomicUsize::new(0);
    static EARLY: AtomicUsize = AtomicUsize::new(0);
    static SUBMITS: AtomicUsize = AtomicUsize::new(0);

    /// An engine that notes, at its first submit, whether every worker was prepared.
    struct Watch(MockEngine, bool);
    impl crate::engine::Engine for Watch {
        fn submit(
            &mut self,
            ops: &[crate::engine::IoOp],
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<usize> {
            SUBMITS.fetch_add(1, Ordering::SeqCst);
            if !self.1 {
                self.1 = true;
                if PREPARED.load(Ordering::SeqCst) < 4 {
                    EARLY.fetch_add(1, Ordering::SeqCst);
                }
            }
            self.0.submit(ops, sys)
        }
        fn reap(
            &mut self,
            min: usize,
            done: &mut Vec<crate::engine::Completion>,
            sys: &mut crate::stats::SyscallCounts,
        ) -> std::io::Result<usize> {
            self.0.reap(min, done, sys)
        }
        fn buffers(&mut self) -> &mut crate::engine::BufferPool {
            self.0.buffers()
        }
        fn flush(&mut self, sys: &mut crate::stats::SyscallCounts) -> std::io::Result<()> {
            self.0.flush(sys)
        }
    }

    #[test]
    fn no_worker_starts_before_every_worker_is_prepared() {
        // 2 targets x 2 threads; the last one takes 150 ms to prepare.
        fn slow_prepare(
            job: &Job,
            _: &Plan,
            _: Option<mark::FileId>,
            user: usize,
            thread: u32,
            _: Option<&Arc<worker::verify::VerifyShared>>,
        ) -> Result<worker::Worker, IoFailure> {
            if (user, thread) == (1, 1) {
                std::thread::sleep(Duration::from_millis(150));
            }
            let (e, _) = MockEngine::new(Script::default(), 4096);
            let w =
                worker::Worker::with_engine(job, 1 << 20, user, thread, Box::new(Watch(e, false)));
            PREPARED.fetch_add(1, Ordering::SeqCst);
            w
        }
        let mut j = job(2);
        j.io_count = Some(50);
        // Called off at the gate: nothing runs.
        let e = run_mock(&j, slow_prepare, false).unwrap_err();
        assert!(e.to_string().contains("called off"), "{e}");
        assert_eq!(
            SUBMITS.load(Ordering::SeqCst),
            0,
            "no I/O before the gate opened"
        );
        PREPARED.store(0, Ordering::SeqCst);
        let (out, _) = run_mock(&j, slow_prepare, true).unwrap();
        assert_eq!(
            EARLY.load(Ordering::SeqCst),
            0,
            "a worker started before the others were ready"
        );
        assert_eq!(out.len(), 4);
        assert!(out
            .iter()
            .all(|o| o.stats.read_ops == 50 && o.failure.is_none()));
        assert_eq!(SUBMITS.load(Ordering::SeqCst), 200);
        let (status, failures) = settle(&out, false);
        assert_eq!((status, failures.len()), (RunStatus::Complete, 0));
    }

    #[test]
    fn one_failing_worker_stops_the_rest_and_the_run_failed() {
        // Worker (0, 1) fails its 20th I/O; the others would run for a minute.
        fn prepare(
            job: &Job,
            _: &Plan,
            _: Option<mark::FileId>,
            user: usize,
            thread: u32,
            _: Option<&Arc<worker::verify::VerifyShared>>,
        ) -> Result<worker::Worker, IoFailure> {
            let script = Script {
                latency: Duration::from_micros(100),
                outcomes: if (user, thread) == (0, 1) {
                    vec![(19, Outcome::Errno(libc::EIO))]
                } else {
                    Vec::new()
                },
                ..Default::default()
            };
            let (e, _) = MockEngine::new(script, 4096);
            worker::Worker::with_engine(job, 1 << 20, user, thread, Box::new(e))
        }
        let mut j = job(2);
        j.time_s = Some(60.0);
        let t = std::time::Instant::now();
        let (out, _) = run_mock(&j, prepare, true).unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the others did not stop"
        );
        assert_eq!(out.len(), 4);
        let failed: Vec<_> = out.iter().filter(|o| o.failure.is_some()).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(
            (failed[0].user, failed[0].thread, failed[0].stats.read_ops),
            (0, 1, 19)
        );
        // Even interrupted, a run with a failure is failed, and names it.
        let (status, failures) = settle(&out, true);
        assert_eq!(status, RunStatus::Failed);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].message.contains("read failed"));
    }

    #[test]
    fn a_worker_that_cannot_prepare_fails_the_run_without_io() {
        fn prepare(
            job: &Job,
            _: &Plan,
            _: Option<mark::FileId>,
            user: usize,
            thread: u32,
            _: Option<&Arc<worker::verify::VerifyShared>>,
        ) -> Result<worker::Worker, IoFailure> {
            if user == 1 {
                return Err(IoFailure {
                    user,
                    thread,
                    path: "b".into(),
                    offset: None,
                    message: "open: denied".into(),
                });
            }
            let (e, _) = MockEngine::new(
                Script {
                    latency: Duration::from_micros(100),
                    ..Default::default()
                },
                4096,
            );
            worker::Worker::with_engine(job, 1 << 20, user, thread, Box::new(e))
        }
        let mut j = job(1);
        j.time_s = Some(60.0);
        let (out, _) = run_mock(&j, prepare, true).unwrap();
        assert_eq!(out.len(), 2);
        let bad = out.iter().find(|o| o.user == 1).unwrap();
        assert_eq!(bad.stats.ops(), 0);
        assert_eq!(bad.failure.as_ref().unwrap().message, "open: denied");
        assert_eq!(settle(&out, false).0, RunStatus::Failed);
    }

    #[test]
    fn status_is_partial_only_when_interrupted_without_failures() {
        let ok = ThreadOutcome {
            user: 0,
            thread: 0,
            stats: Stats::default(),
            failure: None,
            verify: None,
            intervals: Vec::new(),
        };
        assert_eq!(
            settle(std::slice::from_ref(&ok), false).0,
            RunStatus::Complete
        );
        assert_eq!(
            settle(std::slice::from_ref(&ok), true).0,
            RunStatus::Partial
        );
        assert_eq!(settle(&[], true).0, RunStatus::Partial);
    }
}

#[test]
fn the_warm_up_runs_but_is_left_out() {
    let mut j = job(Access::RandRead);
    j.time_s = Some(0.1);
    j.ramp_s = Some(0.1);
    let script = Script {
        latency: Duration::from_millis(2),
        ..Default::default()
    };
    let (out, log, _) = drive(&j, script);
    let s = &out.stats;
    assert!(out.failure.is_none());
    // --time counts after the warm-up: the loop ran for both, the Result holds only --time.
    let first = log.ops[0].1;
    let last = log.ops.last().unwrap().1;
    assert!(last.duration_since(first) >= Duration::from_millis(180));
    assert!(
        s.elapsed_s >= 0.1 && s.elapsed_s < 0.15,
        "elapsed {}",
        s.elapsed_s
    );
    // Only the I/Os issued after the warm-up are counted (each 2 ms, one at a time): about
    // half of what the engine saw, with every counted one in the histogram.
    let seen = log.ops.len() as u64;
    assert!(
        s.read_ops > seen / 4 && s.read_ops < seen * 3 / 4,
        "{} of {seen}",
        s.read_ops
    );
    assert_eq!(s.lat_count(), s.read_ops);
    assert_eq!(s.inflight.iter().sum::<u64>(), s.read_ops);
}
