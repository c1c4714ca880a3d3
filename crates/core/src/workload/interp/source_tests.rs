//! A flowop thread as a source driven by the runner's loop on the mock engine: the stop flag,
//! the rate limit (data flowops only), the `--status-interval` series, the warm-up, the trace
//! ring, CPU accounting and the verify hooks. Files are opened for real in a temporary
//! directory (the metadata calls are the real ones); the data I/O goes to the mock.

use super::*;
use crate::engine::mock::{MockEngine, Script};
use crate::engine::Built;
use crate::workload::fileset::{self, SetLayout};
use crate::workload::run::arena_layout;
use std::cell::Cell;

/// One thread writing 4 KiB at random offsets of a 1 MiB file, then stat-ing it.
const WML: &str = "define file name=f,path=$dir,size=1m
define process name=p { thread name=t {
  flowop write name=w,filesetname=f,iosize=4k,random
  flowop statfile name=s,filesetname=f } }
run 1";

struct Fixture {
    model: Model,
    layouts: Vec<SetLayout>,
    arena: Arena,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    fixture_of(WML)
}

fn fixture_of(wml: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let src = crate::workload::Source {
        name: "t.f".into(),
        text: wml.into(),
        defines: vec![("dir".into(), dir.path().display().to_string())],
        shared_rank: None,
    };
    let model = crate::workload::load_source(&src).unwrap_or_else(|e| panic!("{e:#}"));
    let layouts = model
        .filesets
        .iter()
        .map(fileset::layout)
        .collect::<anyhow::Result<Vec<_>>>()
        .unwrap();
    // The file's directory, as the fileset's preparation makes it.
    let file = layouts[0].path(0).as_path().to_path_buf();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let arena = Arena::create(arena_layout(&model)).unwrap();
    Fixture {
        model,
        layouts,
        arena,
        _dir: dir,
    }
}

/// What a drive of the fixture's thread gave: how it ended, the measured series, and the
/// write and statfile flowops' figures.
struct Ran {
    end: End,
    intervals: Vec<crate::runner::live::IntervalSample>,
    ramped: bool,
    writes: u64,
    stats: u64,
    /// Writes since the start, warm-up included (what finishoncount would read).
    writes_tallied: u64,
    /// CPU time of the measured part.
    usage: crate::stats::Usage,
}

/// What a run gives besides the engine's script: a trace ring, the verify hooks' seed.
#[derive(Default)]
struct With {
    script: Script,
    ring: Option<TraceRing>,
    verify_seed: Option<u64>,
}

fn run(
    fx: &Fixture,
    stop: &dyn Fn() -> bool,
    deadline_ms: u64,
    ramp_ms: Option<u64>,
    pacing: StepPacing,
    interval_ns: Option<u64>,
) -> Ran {
    let with = With::default();
    run_with(fx, stop, deadline_ms, ramp_ms, pacing, interval_ns, with).0
}

/// [`run`] on the mock engine `with` says, and the thread's Issuer after the run.
fn run_with(
    fx: &Fixture,
    stop: &dyn Fn() -> bool,
    deadline_ms: u64,
    ramp_ms: Option<u64>,
    pacing: StepPacing,
    interval_ns: Option<u64>,
    with: With,
) -> (Ran, Issuer) {
    let sh = Shared {
        model: &fx.model,
        layouts: &fx.layouts,
        arena: &fx.arena,
        engine: EngineKind::Sync,
        rate: Default::default(),
        trace_files: None,
        interval_ns,
        trace: None,
        ramp: None,
        ramp_bytes: 0,
    };
    let spec = &fx.model.processes[0].threads[0];
    let id = ThreadId {
        process: 0,
        process_instance: 0,
        thread: 0,
        thread_instance: 0,
        slot: 0,
    };
    let (mut t, _) = Thread::new(&sh, spec, id);
    let (engine, _log) = MockEngine::new(with.script, 4096);
    let mut io = Issuer::new(Built::Boxed(Box::new(engine)), FDS, with.ring);
    if let Some(seed) = with.verify_seed {
        io.verify_with(seed);
    }
    let gate = || {};
    let out = drive(
        &mut t,
        &mut io,
        Drive {
            gate: &gate,
            stop,
            deadline: Some(Duration::from_millis(deadline_ms)),
            ramp: ramp_ms.map(Duration::from_millis),
            ramp_bytes: 0,
            pacing,
            interval_ns,
        },
    );
    t.close_all(&mut io);
    let w = t.flat.iter().position(|f| f.name == "w").unwrap();
    let s = t.flat.iter().position(|f| f.name == "s");
    let ran = Ran {
        end: out.end,
        intervals: out.intervals,
        ramped: out.ramped,
        writes: t.stats[w].write_bytes / 4096,
        stats: s.map_or(0, |s| t.stats[s].other_ops),
        writes_tallied: t.tally[w][1] / 4096,
        usage: out.usage,
    };
    (ran, io)
}

/// A stop flag raised after `n` steps.
fn after(n: u32) -> impl Fn() -> bool {
    let checks = Cell::new(0u32);
    move || {
        checks.set(checks.get() + 1);
        checks.get() > n
    }
}

#[test]
fn the_stop_flag_ends_the_thread_between_flowops() {
    let fx = fixture();
    let checks = Cell::new(0u32);
    let stop = || {
        checks.set(checks.get() + 1);
        checks.get() > 5
    };
    let r = run(&fx, &stop, 10_000, None, StepPacing::default(), None);
    assert_eq!(r.end, End::Stopped);
    // Five steps ran: write, statfile, write, statfile, write.
    assert_eq!((r.writes, r.stats), (3, 2));
}

#[test]
fn a_rate_limit_paces_the_data_flowops_only() {
    let fx = fixture();
    let stop = || false;
    // 100 data calls a second for 150 ms: about 15 writes (the first at once), each
    // followed by its unpaced statfile; unpaced, the mock does thousands.
    let pacing = StepPacing::new(Some(100.0), None, 0, 1);
    let r = run(&fx, &stop, 150, None, pacing, None);
    assert_eq!(r.end, End::Stopped);
    assert!((3..=16).contains(&r.writes), "{} writes", r.writes);
    assert!(
        r.stats + 1 >= r.writes && r.stats <= r.writes,
        "{} statfiles after {} writes",
        r.stats,
        r.writes
    );
}

#[test]
fn intervals_hold_the_io_flowops() {
    let fx = fixture();
    let stop = || false;
    let pacing = StepPacing::new(Some(1000.0), None, 0, 1);
    let r = run(&fx, &stop, 80, None, pacing, Some(10_000_000));
    // On the 10 ms grid, in order (an interval a stalled thread passed over is left out,
    // so a loaded machine may give fewer than eight).
    let index: Vec<u32> = r.intervals.iter().map(|i| i.index).collect();
    assert!(index.len() >= 2, "intervals {index:?}");
    assert!(index.windows(2).all(|w| w[0] < w[1]), "intervals {index:?}");
    assert!(index.last().is_some_and(|&i| i <= 8), "intervals {index:?}");
    let writes: u64 = r.intervals.iter().map(|i| i.write_bytes).sum::<u64>() / 4096;
    let others: u64 = r.intervals.iter().map(|i| i.other_ops).sum();
    assert_eq!((writes, others), (r.writes, r.stats));
}

#[test]
fn the_warm_up_is_left_out_of_the_counts_not_out_of_the_tally() {
    let fx = fixture();
    let stop = || false;
    // 100 writes a second: 100 ms of warm-up (about 10 writes), then 30 ms measured
    // (about 3; the deadline counts after the warm-up).
    let pacing = StepPacing::new(Some(100.0), None, 0, 1);
    let r = run(&fx, &stop, 30, Some(100), pacing, None);
    assert!(r.ramped);
    assert!(r.writes <= 8, "{} writes measured", r.writes);
    assert!(
        r.writes_tallied >= r.writes + 3,
        "{} writes in all, {} measured",
        r.writes_tallied,
        r.writes
    );
}

#[test]
fn the_trace_ring_records_the_flowops_calls() {
    let fx = fixture();
    let files = trace_files(&fx.layouts, true).expect("a file table");
    let with = With {
        ring: Some(TraceRing::new(0, files, Instant::now(), 1000)),
        ..With::default()
    };
    let (r, mut io) = run_with(
        &fx,
        &after(5),
        10_000,
        None,
        StepPacing::default(),
        None,
        with,
    );
    assert_eq!((r.writes, r.stats), (3, 2));
    let mut recs = Vec::new();
    io.take_trace()
        .expect("traced")
        .drain_into(|f| f, &mut recs);
    let count = |op| recs.iter().filter(|x| x.op == op).count() as u64;
    assert_eq!((count(TraceOp::Write), count(TraceOp::Stat)), (3, 2));
    // The writes are the flowop's: 4 KiB at 4 KiB offsets of the 1 MiB file.
    let writes = recs.iter().filter(|x| x.op == TraceOp::Write);
    assert!(writes
        .clone()
        .all(|x| x.len == 4096 && x.offset % 4096 == 0));
    assert!(writes
        .clone()
        .all(|x| x.offset < 1 << 20 && x.result == 4096));
}

#[test]
fn the_threads_cpu_time_is_counted_on_it() {
    let fx = fixture();
    let t0 = Instant::now();
    let r = run(&fx, &|| false, 100, None, StepPacing::default(), None);
    let wall = t0.elapsed().as_secs_f64();
    assert!(r.writes > 0);
    let cpu = r.usage.cpu_user_s + r.usage.cpu_sys_s;
    // The mock's writes and the real statfiles take CPU time, counted on this thread (a
    // process's figure would hold the test harness's other threads).
    assert!(cpu > 0.0, "{:?}", r.usage);
    assert!(cpu <= wall + 0.01, "{cpu} s of CPU in {wall} s");
}

/// A 4 KiB file written and read whole, in turn.
const WML_RW: &str = "define file name=f,path=$dir,size=4k
define process name=p { thread name=t {
  flowop write name=w,filesetname=f,iosize=4k,random
  flowop read name=r,filesetname=f,iosize=4k,random } }
run 1";

#[test]
fn the_verify_hooks_check_what_the_flowops_wrote() {
    let fx = fixture_of(WML_RW);
    let store = crate::engine::mock::Store::default();
    let with = |faults| With {
        script: Script {
            store: Some(store.clone()),
            faults,
            ..Script::default()
        },
        ring: None,
        verify_seed: Some(crate::runner::verify::run_seed(3)),
    };
    // Eight steps: write, read, four times.
    let (r, mut io) = run_with(
        &fx,
        &after(8),
        10_000,
        None,
        StepPacing::default(),
        None,
        with(Vec::new()),
    );
    assert_eq!(r.writes, 4);
    let v = io.take_verify().expect("verifying").report;
    assert_eq!(
        (v.blocks_checked, v.blocks_intact, v.bytes_checked),
        (4, 4, 4 * 4096)
    );
    assert_eq!(v.bad_blocks(), 0);
    // The second write (op 2) is stored with a bit flipped: the read after it finds it.
    store.lock().unwrap().clear();
    let flip = vec![(2, crate::engine::mock::Fault::FlipBit(8 * 1000 + 3))];
    let (_, mut io) = run_with(
        &fx,
        &after(8),
        10_000,
        None,
        StepPacing::default(),
        None,
        with(flip),
    );
    let v = io.take_verify().expect("verifying").report;
    assert_eq!(
        (v.blocks_checked, v.corrupt.blocks, v.bad_blocks()),
        (4, 1, 1)
    );
    let m = &v.corrupt.first[0];
    assert_eq!(m.offset_bytes, 1000);
    assert!(m.detail.contains("one bit flipped"), "{}", m.detail);
    assert_eq!(m.target, fx.layouts[0].path(0).to_string());
}
