//! The driver every kind of run goes through: it starts the thread bodies a source supplies
//! (a Job's workers, a workload's thread instances, a trace's replay threads) held at one
//! start gate, opens or calls off the gate, and joins them; and it starts worker processes
//! (`fsbench __worker`) with one spec that names which source the child rebuilds.
//!
//! What a thread does stays with its source; how threads and processes are started, gated,
//! called off after a failed start, and gathered is written once, here.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// The start gate: every body prepares, then waits here; the driver opens it (run) or, when
/// something failed before the start (a thread could not be spawned, a parent never said
/// go), closes it and no body does any I/O.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<(usize, Option<bool>)>,
    cv: Condvar,
}

impl Gate {
    /// A body is prepared; wait for the decision. True = run.
    pub(crate) fn arrive_and_wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.0 += 1;
        self.cv.notify_all();
        while g.1.is_none() {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.1 == Some(true)
    }
    /// Wait until `n` bodies are prepared.
    fn wait_prepared(&self, n: usize) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while g.0 < n {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
    /// The first decision holds: an opened gate is not closed again.
    fn decide(&self, go: bool) {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.1.get_or_insert(go);
        self.cv.notify_all();
    }
}

/// The right to open a crew's gate, handed to whoever decides the start. A rank of a
/// distributed run opens it from its MPI thread the moment the start barrier returns, so
/// the workers wake one thread hop after the barrier, not two (MPI thread → runner thread →
/// workers). A source without a crew gate (worker processes, a workload's arena) hands
/// [`Opener::none`]: it starts when its `go` returns true.
#[derive(Clone)]
pub struct Opener(Option<Arc<Gate>>);

impl Opener {
    /// An opener that opens nothing.
    pub fn none() -> Opener {
        Opener(None)
    }
    /// Release the workers now (the caller's `go` must then return true).
    pub fn open(&self) {
        if let Some(g) = &self.0 {
            g.decide(true);
        }
    }
}

/// What a thread runs: it gets the gate and must call `arrive_and_wait` exactly once, after
/// preparing and before any I/O; None when the gate was closed.
pub(crate) type Body<T> = Box<dyn FnOnce(&Gate) -> Option<T> + Send>;

type Spawned<T> = JoinHandle<Option<T>>;

/// How a thread is started: `Builder::spawn` in a run; tests make it fail.
pub(crate) type Spawner<'a, T> = dyn Fn(std::thread::Builder, Box<dyn FnOnce() -> Option<T> + Send>) -> std::io::Result<Spawned<T>>
    + 'a;

/// Threads started by [`start_threads`], every one held at the gate.
pub(crate) struct Crew<T> {
    gate: Arc<Gate>,
    handles: Vec<Spawned<T>>,
}

/// A thread that could not be started: which one (0-based) and why. Every thread started
/// before it has been called off at the gate and joined.
#[derive(Debug)]
pub(crate) struct SpawnFailed {
    pub index: usize,
    pub error: std::io::Error,
}

/// Start one named thread per body with the given stack, all held at one gate. If a thread
/// cannot be started, the gate is closed and the started ones are joined before returning.
pub(crate) fn start_threads<T: Send + 'static>(
    bodies: impl IntoIterator<Item = (String, Body<T>)>,
    stack: usize,
    spawn: &Spawner<'_, T>,
) -> std::result::Result<Crew<T>, SpawnFailed> {
    let gate = Arc::new(Gate::default());
    let mut handles = Vec::new();
    for (index, (name, body)) in bodies.into_iter().enumerate() {
        let g = gate.clone();
        let builder = std::thread::Builder::new().name(name).stack_size(stack);
        match spawn(builder, Box::new(move || body(&g))) {
            Ok(h) => handles.push(h),
            Err(error) => {
                // Nothing has started: close the gate and let the spawned threads end.
                gate.decide(false);
                for h in handles {
                    let _ = h.join();
                }
                return Err(SpawnFailed { index, error });
            }
        }
    }
    Ok(Crew { gate, handles })
}

/// The ordinary spawner.
pub(crate) fn spawn_thread<T: Send + 'static>(
    b: std::thread::Builder,
    f: Box<dyn FnOnce() -> Option<T> + Send>,
) -> std::io::Result<Spawned<T>> {
    b.spawn(f)
}

impl<T> Crew<T> {
    /// Wait for every body to be prepared, then ask `go` (process mode waits for its parent
    /// here; a rank waits for its start barrier and may open the gate itself through the
    /// [`Opener`]): true opens the gate and returns the start instant; false calls the run
    /// off (and `go` must not have opened it).
    pub(crate) fn open(&self, go: impl FnOnce(Opener) -> bool) -> Option<Instant> {
        self.gate.wait_prepared(self.handles.len());
        if !go(Opener(Some(self.gate.clone()))) {
            self.gate.decide(false);
            return None;
        }
        let t0 = Instant::now();
        self.gate.decide(true);
        Some(t0)
    }

    /// Whether any thread is still running.
    pub(crate) fn alive(&self) -> bool {
        self.handles.iter().any(|h| !h.is_finished())
    }

    /// Join every thread: the outcomes of those that ran (in start order), or an error when
    /// one panicked.
    pub(crate) fn join(self) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(self.handles.len());
        let mut panicked = false;
        for h in self.handles {
            match h.join() {
                Ok(Some(o)) => out.push(o),
                Ok(None) => {}
                Err(_) => panicked = true,
            }
        }
        if panicked {
            anyhow::bail!("a worker thread panicked");
        }
        Ok(out)
    }
}

/// What a worker process is told to rebuild: the one spec of `fsbench __worker`. The runner
/// carries it without knowing the sources: `source` names which one (`job`, `workload`) and
/// `spec` is that source's own spec; the command line maps names to sources.
#[derive(Serialize, Deserialize)]
pub struct ChildSpec {
    pub source: String,
    pub spec: serde_json::Value,
}

impl ChildSpec {
    pub(crate) fn new(source: &str, spec: &impl Serialize) -> Result<ChildSpec> {
        Ok(ChildSpec {
            source: source.to_string(),
            spec: serde_json::to_value(spec)?,
        })
    }
}

/// Environment variable carrying the parent's PID to a worker process, so the worker dies
/// with it (a SIGKILLed parent must not leave workers writing forever).
pub(crate) const PARENT_ENV: &str = "FSBENCH_PARENT_PID";

/// Start `fsbench __worker` and send it its spec (one JSON line). Its stdout is piped for
/// the outcomes; stdin stays open for the start protocol of the source.
pub(crate) fn start_process(spec: &ChildSpec) -> Result<Child> {
    start_process_with(spec, &[])
}

/// [`start_process`], the child inheriting the close-on-exec descriptors `inherit` (under
/// the same numbers) and no other: the live board's memfd.
pub(crate) fn start_process_with(
    spec: &ChildSpec,
    inherit: &[std::os::fd::RawFd],
) -> Result<Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("finding the fsbench executable")?;
    let mut cmd = Command::new(&exe);
    if !inherit.is_empty() {
        let fds = inherit.to_vec();
        // SAFETY: runs in the forked child before exec: it only calls fcntl (async-signal
        // safe) on descriptors of its own copy of the table, and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &fds {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    let mut child = cmd
        .arg("__worker")
        .env(PARENT_ENV, std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting a worker process")?;
    if let Some(stdin) = child.stdin.as_mut() {
        // A child that died before reading its spec is reported by the start barrier.
        let _ = serde_json::to_writer(&mut *stdin, spec)
            .map_err(std::io::Error::from)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
    }
    Ok(child)
}

/// Read a child's outcomes (one JSON document on stdout) and reap it.
pub(crate) fn finish_process<T: serde::de::DeserializeOwned>(
    mut child: Child,
    rest: &mut impl Read,
) -> Result<Vec<T>> {
    let mut text = String::new();
    rest.read_to_string(&mut text)?;
    drop(child.stdin.take());
    let status = child.wait()?;
    serde_json::from_str::<Vec<T>>(text.trim())
        .map_err(|e| anyhow::anyhow!("worker process ({status}) sent no result: {e}"))
}

/// Child side: `fsbench __worker`. Dies with the parent first, then hands the spec to
/// `run_source` (the command line's map from source names to their child sides), with the
/// rest of stdin for the source's start protocol.
pub fn worker_main(
    run_source: impl FnOnce(ChildSpec, &mut std::io::StdinLock<'static>) -> Result<()>,
) -> Result<()> {
    let parent = std::env::var(PARENT_ENV).ok().and_then(|p| p.parse().ok());
    crate::guard::die_with_parent(parent);
    super::signal::install();
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    let mut line = String::new();
    lock.read_line(&mut line)?;
    let spec: ChildSpec = serde_json::from_str(&line).context("reading the worker spec")?;
    run_source(spec, &mut lock)
}

/// Write a child's outcomes as one JSON line on stdout.
pub(crate) fn send_outcomes<T: Serialize>(outcomes: &[T]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, outcomes)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn bodies(n: usize, ran: &Arc<AtomicUsize>) -> Vec<(String, Body<usize>)> {
        (0..n)
            .map(|i| {
                let ran = ran.clone();
                let b: Body<usize> = Box::new(move |gate| {
                    if !gate.arrive_and_wait() {
                        return None;
                    }
                    ran.fetch_add(1, Ordering::SeqCst);
                    Some(i)
                });
                (format!("t{i}"), b)
            })
            .collect()
    }

    #[test]
    fn a_failed_start_calls_off_the_started_threads() {
        let ran = Arc::new(AtomicUsize::new(0));
        let count = AtomicUsize::new(0);
        let spawn = |b: std::thread::Builder, f: Box<dyn FnOnce() -> Option<usize> + Send>| {
            if count.fetch_add(1, Ordering::SeqCst) == 3 {
                Err(std::io::Error::from_raw_os_error(libc::EAGAIN))
            } else {
                b.spawn(f)
            }
        };
        let Err(f) = start_threads(bodies(6, &ran), 64 << 10, &spawn) else {
            panic!("the fourth start failed");
        };
        assert_eq!(f.index, 3);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a called-off body ran");
    }

    #[test]
    fn bodies_run_only_after_the_gate_opens_and_all_are_joined() {
        let ran = Arc::new(AtomicUsize::new(0));
        let crew = start_threads(bodies(5, &ran), 64 << 10, &spawn_thread).unwrap();
        let seen = crew.open(|_| {
            // Every body is waiting at the gate here: none has run.
            std::thread::sleep(std::time::Duration::from_millis(20));
            ran.load(Ordering::SeqCst)
        } == 0);
        assert!(seen.is_some(), "a body ran before the gate opened");
        assert_eq!(crew.join().unwrap(), vec![0, 1, 2, 3, 4]);
        assert_eq!(ran.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn the_opener_releases_the_bodies_before_go_returns() {
        let ran = Arc::new(AtomicUsize::new(0));
        let crew = start_threads(bodies(4, &ran), 64 << 10, &spawn_thread).unwrap();
        let opened = crew.open(|opener| {
            let other = std::thread::spawn(move || opener.open());
            other.join().unwrap();
            // `go` has not returned, yet every body runs.
            let t = std::time::Instant::now();
            while ran.load(Ordering::SeqCst) < 4 {
                assert!(t.elapsed().as_secs() < 20, "the opener released nothing");
                std::thread::yield_now();
            }
            true
        });
        assert!(opened.is_some());
        assert_eq!(crew.join().unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_closed_gate_runs_nothing() {
        let ran = Arc::new(AtomicUsize::new(0));
        let crew = start_threads(bodies(3, &ran), 64 << 10, &spawn_thread).unwrap();
        assert!(crew.open(|_| false).is_none());
        assert!(crew.join().unwrap().is_empty());
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
