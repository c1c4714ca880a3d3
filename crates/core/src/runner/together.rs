//! Several Jobs run at the same time, released at one instant: fio's jobs that no `stonewall`
//! separates. Each Job is a run of its own (its own targets, plan, verification and cleanup,
//! through [`super::run_gated`]); what they share is the start: every run prepares its
//! targets and workers, and only when all of them are ready are all their gates opened, one
//! after the other from this thread. When one cannot start (a refusal, a failed layout), the
//! others are called off before any I/O, and remove what they created. A file several of the
//! runs name is held once for all of them (`super::share`): laid out before any gate opens,
//! removed after the last of them has ended.

use super::{drive::Opener, live::Watching, run_in_group, Gate, RankPart, RunOutcome};
use crate::job::Job;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What happened to one Job of a `run_together`.
pub enum Together {
    /// It ran (or failed while preparing, or was refused): what `run_gated` returned.
    Ran(Box<Result<RunOutcome>>),
    /// It was ready but called off, because another Job of the group could not start.
    CalledOff,
}

/// A message from a run's thread to the one deciding the start.
enum Event {
    /// Run `i` is prepared and waits at its gate.
    Ready(usize, Opener, Sender<bool>),
    /// A run ended without reaching its gate (refused, or failed while preparing).
    EndedEarly,
}

/// One Job of a `run_together`.
pub struct Start {
    pub job: Job,
    /// The part of its targets it covers (None: all of them).
    pub part: Option<RankPart>,
    /// How long after the others it is released (fio's `startdelay`).
    pub delay: Duration,
    /// Its own `--status-interval` (fio's logs of one job), over the group's.
    pub interval: Option<Duration>,
}

/// Run `jobs` at the same time (each after its delay), watched as `watch` says; one entry
/// per Job, in order. Each outcome's `started_unix_s` is the instant its gate opened.
pub(crate) fn run_together(jobs: &[Start], watch: &Watching) -> Vec<Together> {
    let (tx, rx) = channel::<Event>();
    // The files several of the runs name: held once for the group, not refused.
    let group = super::share::GroupTargets::of(jobs.iter().map(|s| &s.job));
    let group = group.as_ref();
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(
                |(
                    i,
                    Start {
                        job,
                        part,
                        interval,
                        ..
                    },
                )| {
                    let tx = tx.clone();
                    let watch = Watching {
                        status_interval: interval.or(watch.status_interval),
                        ..watch.clone()
                    };
                    s.spawn(move || {
                        // Tells the start decision if the run ends (or unwinds) before its gate.
                        let early = EarlyEnd {
                            reached: Arc::new(AtomicBool::new(false)),
                            tx: tx.clone(),
                        };
                        let hook_reached = early.reached.clone();
                        let gate = Gate {
                            start: Box::new(move |opener| {
                                hook_reached.store(true, Ordering::Relaxed);
                                let (go_tx, go_rx) = channel();
                                if tx.send(Event::Ready(i, opener, go_tx)).is_err() {
                                    return false;
                                }
                                go_rx.recv().unwrap_or(false)
                            }),
                            after_io: Box::new(|| {}),
                        };
                        let out = run_in_group(job, *part, Some(gate), group, &watch);
                        drop(early);
                        out
                    })
                },
            )
            .collect();
        drop(tx);
        let mut ready: Vec<(usize, Opener, Sender<bool>)> = Vec::new();
        let mut early = false;
        for _ in 0..jobs.len() {
            match rx.recv() {
                Ok(Event::Ready(i, o, g)) => ready.push((i, o, g)),
                Ok(Event::EndedEarly) | Err(_) => {
                    early = true;
                    // Runs still waiting to prepare a shared file need not lay it out.
                    if let Some(g) = group {
                        g.call_off();
                    }
                    break;
                }
            }
        }
        // All prepared: open every gate now (a delayed one when its delay has passed), so
        // the runs start within microseconds of each other; otherwise call the prepared ones
        // off (they clean up and return).
        let go = !early && ready.len() == jobs.len();
        let mut opened_unix_s = vec![None; jobs.len()];
        if go {
            ready.sort_by_key(|(i, _, _)| jobs[*i].delay);
            let t0 = Instant::now();
            for (i, opener, g) in &ready {
                wait_until(t0 + jobs[*i].delay);
                opened_unix_s[*i] = Some(super::now_unix_s());
                opener.open();
                let _ = g.send(true);
            }
        }
        let mut called_off = vec![false; jobs.len()];
        for (i, _, g) in &ready {
            called_off[*i] = !go;
            if !go {
                let _ = g.send(false);
            }
        }
        // A run still preparing when another ended early finds no one to tell it to start:
        // its start hook's send fails and it calls itself off.
        drop(rx);
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                let out = h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a run's thread panicked")));
                match out {
                    Err(_) if called_off[i] || (early && is_called_off(&out)) => {
                        Together::CalledOff
                    }
                    Ok(mut o) => {
                        // The run's own clock started before it waited for the others.
                        if let Some(t) = opened_unix_s[i] {
                            o.started_unix_s = t;
                        }
                        Together::Ran(Box::new(Ok(o)))
                    }
                    out => Together::Ran(Box::new(out)),
                }
            })
            .collect()
    })
}

/// Sleep until `t`, waking early on Ctrl-C (the runs then stop as soon as they start).
fn wait_until(t: Instant) {
    while !super::signal::interrupted() {
        let now = Instant::now();
        if now >= t {
            return;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

/// Sends [`Event::EndedEarly`] when dropped before the run reached its gate, also when the
/// run's thread unwinds, so the start decision never waits for a run that is gone.
struct EarlyEnd {
    reached: Arc<AtomicBool>,
    tx: Sender<Event>,
}

impl Drop for EarlyEnd {
    fn drop(&mut self) {
        if !self.reached.load(Ordering::Relaxed) {
            let _ = self.tx.send(Event::EndedEarly);
        }
    }
}

fn is_called_off(out: &Result<RunOutcome>) -> bool {
    matches!(out, Err(e) if e.to_string().contains("called off before it started"))
}
