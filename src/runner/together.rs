//! Several Jobs run at the same time, released at one instant: fio's jobs that no `stonewall`
//! separates. Each Job is a run of its own (its own targets, plan, verification and cleanup,
//! through [`super::run_gated`]); what they share is the start: every run prepares its
//! targets and workers, and only when all of them are ready are all their gates opened, one
//! after the other from this thread. When one cannot start (a refusal, a failed layout), the
//! others are called off before any I/O, and remove what they created.

use super::{drive::Opener, live::Watching, run_gated, Gate, RankPart, RunOutcome};
use crate::job::Job;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

/// What happened to one Job of a [`run_together`].
pub(crate) enum Together {
    /// It ran (or failed while preparing, or was refused): what `run_gated` returned.
    Ran(Result<RunOutcome>),
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

/// Run `jobs` at the same time, each over its part of its targets (None: all of them),
/// watched as `watch` says; one entry per Job, in order.
pub(crate) fn run_together(jobs: &[(Job, Option<RankPart>)], watch: &Watching) -> Vec<Together> {
    let (tx, rx) = channel::<Event>();
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, (job, part))| {
                let tx = tx.clone();
                s.spawn(move || {
                    // Set by the start hook: the run reached its gate.
                    let reached = Arc::new(AtomicBool::new(false));
                    let (hook_reached, ready_tx) = (reached.clone(), tx.clone());
                    let gate = Gate {
                        start: Box::new(move |opener| {
                            hook_reached.store(true, Ordering::Relaxed);
                            let (go_tx, go_rx) = channel();
                            if ready_tx.send(Event::Ready(i, opener, go_tx)).is_err() {
                                return false;
                            }
                            go_rx.recv().unwrap_or(false)
                        }),
                        after_io: Box::new(|| {}),
                    };
                    let out = run_gated(job, *part, Some(gate), watch);
                    if !reached.load(Ordering::Relaxed) {
                        let _ = tx.send(Event::EndedEarly);
                    }
                    out
                })
            })
            .collect();
        drop(tx);
        let mut ready: Vec<(usize, Opener, Sender<bool>)> = Vec::new();
        let mut early = false;
        for _ in 0..jobs.len() {
            match rx.recv() {
                Ok(Event::Ready(i, o, g)) => ready.push((i, o, g)),
                Ok(Event::EndedEarly) | Err(_) => {
                    early = true;
                    break;
                }
            }
        }
        // All prepared: open every gate now, so the runs start within microseconds of each
        // other; otherwise call the prepared ones off (they clean up and return).
        let go = !early && ready.len() == jobs.len();
        if go {
            for (_, opener, _) in &ready {
                opener.open();
            }
        }
        let mut called_off = vec![false; jobs.len()];
        for (i, _, g) in &ready {
            called_off[*i] = !go;
            let _ = g.send(go);
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
                    out => Together::Ran(out),
                }
            })
            .collect()
    })
}

fn is_called_off(out: &Result<RunOutcome>) -> bool {
    matches!(out, Err(e) if e.to_string().contains("called off before it started"))
}
