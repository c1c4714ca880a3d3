//! Process mode (vxbench -P / -p): the runner re-executes fsbench as `fsbench __worker`,
//! one child per user (or per thread). Each child prepares its workers, says `ready`, waits
//! for `go` on stdin (the cross-process start barrier), runs, and prints its outcomes as JSON.

use super::target::Plan;
use super::worker::{IoFailure, ThreadOutcome};
use crate::job::{Job, WorkerMode};
use crate::stats::Stats;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::time::Instant;

/// What the parent sends a child.
#[derive(Serialize, Deserialize)]
pub struct WorkerSpec {
    pub job: Job,
    pub plan: Plan,
    pub workers: Vec<(usize, u32)>,
    /// (device, inode) of each prepared target: a child never opens another file.
    #[serde(default)]
    pub ids: Vec<super::mark::FileId>,
    /// The run's generation table and journal, when it verifies.
    #[serde(default)]
    pub verify: Option<super::worker::verify::VerifySpec>,
    /// The parent's `--status-interval` (ns): the child's workers keep the same intervals.
    #[serde(default)]
    pub status_interval_ns: Option<u64>,
    /// The intervals are for the stability figures only: no latency per interval.
    #[serde(default)]
    pub interval_counts_only: bool,
    /// The parent's live board (`--progress`), inherited: the child's workers publish their
    /// counters there, so the parent's line shows rates.
    #[serde(default)]
    pub live_board: Option<super::live::BoardShare>,
}

#[derive(Serialize, Deserialize)]
struct WireOutcome {
    user: usize,
    thread: u32,
    /// Stats cross the pipe as they are (histograms exactly, by bucket).
    stats: Stats,
    failure: Option<IoFailure>,
    #[serde(default)]
    verify: Option<crate::verify::report::VerifyReport>,
    /// The worker's `--status-interval` intervals.
    #[serde(default)]
    intervals: Vec<super::live::IntervalSample>,
}

impl From<&ThreadOutcome> for WireOutcome {
    fn from(t: &ThreadOutcome) -> Self {
        WireOutcome {
            user: t.user,
            thread: t.thread,
            stats: t.stats.clone(),
            failure: t.failure.clone(),
            verify: t.verify.clone(),
            intervals: t.intervals.clone(),
        }
    }
}

impl From<WireOutcome> for ThreadOutcome {
    fn from(w: WireOutcome) -> Self {
        ThreadOutcome {
            user: w.user,
            thread: w.thread,
            stats: w.stats,
            failure: w.failure,
            verify: w.verify,
            intervals: w.intervals,
        }
    }
}

/// Parent side: one child per group of workers; `on_go` is called once they are all told to
/// go (the runner starts sampling the host there).
pub(crate) fn run_processes(
    job: &Job,
    plan: &Plan,
    ids: &[super::mark::FileId],
    verify: Option<&super::worker::verify::VerifyShared>,
    watch: &super::live::WorkerWatch,
    on_go: impl FnOnce(),
) -> Result<(Vec<ThreadOutcome>, f64)> {
    let all = super::all_workers(job);
    let groups: Vec<Vec<(usize, u32)>> = match job.workers {
        WorkerMode::ProcessPerThread => all.into_iter().map(|w| vec![w]).collect(),
        _ => (0..job.targets.len())
            .map(|u| all.iter().copied().filter(|w| w.0 == u).collect())
            .collect(),
    };
    let mut children = Vec::new();
    let board = watch.board.as_ref().and_then(|b| b.share());
    for g in groups {
        let spec = super::drive::ChildSpec::new(
            "job",
            &WorkerSpec {
                job: job.clone(),
                plan: plan.clone(),
                workers: g,
                ids: ids.to_vec(),
                verify: verify.map(|v| v.spec.clone()),
                status_interval_ns: watch.interval_ns,
                interval_counts_only: watch.counts_only,
                live_board: board,
            },
        )?;
        let inherit: Vec<i32> = board.iter().map(|b| b.fd).collect();
        let mut child = super::drive::start_process_with(&spec, &inherit)?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        children.push((child, stdin, stdout));
    }
    // Barrier: every child prepared before any starts.
    for (_, _, out) in children.iter_mut() {
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("a worker process failed to start (said {:?})", line.trim());
        }
    }
    // Every child has mapped the generation table: its name is no longer needed.
    if let Some(v) = verify {
        v.table.unlink();
    }
    let t0 = Instant::now();
    for (_, stdin, _) in children.iter_mut() {
        stdin.write_all(b"go\n")?;
        stdin.flush()?;
    }
    on_go();
    // A stop of the parent's workers reaches the children: a Ctrl-C aimed at the parent
    // alone, or a distributed run's stonewall (`signal::stop_workers`), is forwarded as
    // SIGINT, which stops each child's workers at their next I/O; their partial Stats come
    // back over the pipe as usual.
    let pids: Vec<i32> = children.iter().map(|(c, _, _)| c.id() as i32).collect();
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let finished = finished.clone();
        std::thread::spawn(move || {
            while !finished.load(std::sync::atomic::Ordering::Relaxed) {
                if super::signal::stop_requested() {
                    for &pid in &pids {
                        // SAFETY: signalling our own child processes.
                        unsafe { libc::kill(pid, libc::SIGINT) };
                    }
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let mut outcomes = Vec::new();
    let mut problem = None;
    for (child, stdin, mut out) in children {
        drop(stdin);
        match super::drive::finish_process::<WireOutcome>(child, &mut out) {
            Ok(parsed) => outcomes.extend(parsed.into_iter().map(ThreadOutcome::from)),
            Err(e) => problem = Some(e),
        }
    }
    finished.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watcher.join();
    if let Some(p) = problem {
        return Err(p);
    }
    Ok((outcomes, t0.elapsed().as_secs_f64()))
}

/// Child side of a Job spec (`fsbench __worker`, see `drive::worker_main`): prepare the
/// workers, say `ready`, run on `go`, print the outcomes.
pub fn child(spec: WorkerSpec, input: &mut impl BufRead) -> Result<()> {
    // Intervals as the parent keeps them; no live line in a child (its stderr is the
    // parent's): its workers publish on the parent's board, mapped here.
    let mut watch = super::live::WorkerWatch {
        board: None,
        interval_ns: spec.status_interval_ns,
        counts_only: spec.interval_counts_only,
        // A traced run's worker process finds that out from its environment.
        trace: crate::trace::TraceSession::from_env(),
        ..Default::default()
    };
    if let Some(share) = spec.live_board {
        // Without it the parent's line lacks this child's counters; the run is unaffected.
        match super::live::attach_board(share) {
            Ok(b) => watch.board = Some(b),
            Err(e) => eprintln!("fsbench: worker process: no live counters ({e})"),
        }
    }
    let verify = spec
        .verify
        .clone()
        .map(super::worker::verify::VerifyShared::open)
        .transpose()?
        .map(std::sync::Arc::new);
    let (outcomes, _) = super::run_threads_with(
        &spec.job,
        &spec.plan,
        &spec.ids,
        spec.workers,
        |_| {
            let mut out = std::io::stdout();
            let _ = out.write_all(b"ready\n");
            let _ = out.flush();
            let mut go = String::new();
            // Only an explicit `go` starts the I/O: end of input means the parent gave up.
            matches!(input.read_line(&mut go), Ok(n) if n > 0) && go.trim() == "go"
        },
        verify,
        &watch,
    )?;
    let wire: Vec<WireOutcome> = outcomes.iter().map(WireOutcome::from).collect();
    super::drive::send_outcomes(&wire)
}
