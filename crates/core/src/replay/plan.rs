//! The replay plan: what each traced thread will do, derived from the trace before anything
//! is created or started.

use super::{CALLS, HIST_PAIR_BYTES, REPORTED_THREADS_MAX, WORKER_STACK_BYTES};
use crate::stats::LatencyHist;
use crate::trace::{Trace, TraceOp};
use std::collections::HashMap;

/// One call a replay worker issues.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    pub(super) op: TraceOp,
    /// Index into the thread's own file list ([`ThreadPlan::files`]).
    pub(super) file: u32,
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) start_ns: u64,
}

/// What one traced thread will do.
#[derive(Debug, Clone)]
pub(super) struct ThreadPlan {
    /// Thread id in the trace.
    pub(super) id: u32,
    pub(super) steps: Vec<Step>,
    /// Trace file indices this thread uses; a step's `file` indexes this list.
    pub(super) files: Vec<u32>,
    /// Largest read or write (sizes this thread's buffer).
    pub(super) max_len: u32,
    /// Reads and writes among the steps (sizes its latency samples).
    pub(super) data_ops: u64,
    /// Trace file index it used most: reported as that file's user.
    pub(super) user: usize,
    /// Its unlink steps: each removes a placeholder the thread creates in the replay's own
    /// directory before the start (step `offset` = the placeholder's number).
    pub(super) unlinks: u64,
    /// Its mkdir steps (step `offset` = the new directory's number).
    pub(super) mkdirs: u64,
    /// Whether it lists the replay's directory (it opens its own descriptor of it).
    pub(super) readdirs: bool,
    /// `--verify`: per step, whether it is a read that is checked (empty: none is).
    pub(super) checked: Vec<bool>,
}

/// A step's `file` for the calls on the replay's own directory (mkdir, unlink, readdir):
/// traced directories and the files unlinked in them are stood for by one directory the
/// replay creates, never by the traced paths.
pub(super) const DIR_FILE: u32 = u32::MAX;

/// What a replay will do, derived from the trace (exposed for `--dry-run` and tests).
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    /// Size each traced file needs (index = trace file index); 0 for files without data I/O.
    pub sizes: Vec<u64>,
    pub(super) threads: Vec<ThreadPlan>,
    pub skipped_calls: u64,
    /// Whether some thread makes, removes or lists directory entries (the replay then
    /// creates its own directory for them).
    pub(super) has_dir_ops: bool,
    /// Number of data calls of each size (the Result's I/O size histogram).
    pub(super) len_counts: std::collections::BTreeMap<u32, u64>,
}

impl ReplayPlan {
    pub fn from_trace(t: &Trace) -> Result<ReplayPlan, crate::error::UsageError> {
        use crate::trace::budget;
        let what = "replay: the trace";
        // Steps, the sorted record list and the per-thread maps: estimated before any of
        // them is built.
        budget::check(what, (t.records.len() as u64).saturating_mul(32 + 8 + 16))?;
        let mut sizes = budget::try_filled(t.files.len(), 0u64, what)?;
        let mut threads: Vec<ThreadPlan> = Vec::new();
        let mut thread_of: HashMap<u32, usize> = HashMap::new();
        // Per thread: trace file index -> (its index in the thread's list, uses).
        let mut local: Vec<HashMap<u32, (u32, u64)>> = Vec::new();
        let mut skipped = 0;
        let mut len_counts = std::collections::BTreeMap::new();
        let mut has_dir_ops = false;
        let mut recs: Vec<&crate::trace::TraceRecord> = budget::try_vec(t.records.len(), what)?;
        recs.extend(t.records.iter());
        recs.sort_by_key(|r| (r.start_ns, r.id));
        for r in recs {
            if r.file as usize >= t.files.len() {
                skipped += 1;
                continue;
            }
            let (op, offset, len) = match r.op {
                TraceOp::Read | TraceOp::Write => {
                    let n = r.done_bytes();
                    if n == 0 {
                        skipped += 1;
                        continue;
                    }
                    if n > u32::MAX as u64 / 2 {
                        return Err(crate::usage!(
                            "trace record {} moves {n} bytes in one call: replay handles up to 2 GiB per call",
                            r.id
                        ));
                    }
                    let s = &mut sizes[r.file as usize];
                    *s = (*s).max(r.offset.saturating_add(n));
                    *len_counts.entry(n as u32).or_insert(0u64) += 1;
                    (r.op, r.offset, n as u32)
                }
                TraceOp::Fsync | TraceOp::Fdatasync | TraceOp::Stat if r.result >= 0 => {
                    (r.op, 0, 0)
                }
                TraceOp::Unlink | TraceOp::Mkdir | TraceOp::Readdir if r.result >= 0 => {
                    (r.op, 0, 0)
                }
                _ => {
                    skipped += 1;
                    continue;
                }
            };
            let ti = *thread_of.entry(r.thread).or_insert_with(|| {
                threads.push(ThreadPlan {
                    id: r.thread,
                    steps: Vec::new(),
                    files: Vec::new(),
                    max_len: 0,
                    data_ops: 0,
                    user: 0,
                    unlinks: 0,
                    mkdirs: 0,
                    readdirs: false,
                    checked: Vec::new(),
                });
                local.push(HashMap::new());
                threads.len() - 1
            });
            let th = &mut threads[ti];
            if let Some(step) = th.dir_step(op, r.start_ns) {
                has_dir_ops = true;
                th.steps.push(step);
                continue;
            }
            let next = th.files.len() as u32;
            let e = local[ti].entry(r.file).or_insert((next, 0));
            if e.0 == next {
                th.files.push(r.file);
            }
            e.1 += 1;
            let file = e.0;
            if op.is_data() {
                th.data_ops += 1;
                th.max_len = th.max_len.max(len);
            }
            th.steps.push(Step {
                op,
                file,
                offset,
                len,
                start_ns: r.start_ns,
            });
        }
        if threads.is_empty() {
            return Err(crate::usage!(
                "the trace has no successful reads, writes, syncs or metadata calls to replay"
            ));
        }
        for (th, uses) in threads.iter_mut().zip(&local) {
            th.user = uses
                .iter()
                .max_by_key(|(f, (_, n))| (*n, std::cmp::Reverse(**f)))
                .map(|(f, _)| *f as usize)
                .unwrap_or(0);
            th.steps.shrink_to_fit();
        }
        Ok(ReplayPlan {
            sizes,
            threads,
            skipped_calls: skipped,
            len_counts,
            has_dir_ops,
        })
    }

    /// Calls each thread will issue, in order: (thread, op, file, offset, len).
    pub fn sequence(&self) -> Vec<(u32, TraceOp, u32, u64, u64)> {
        self.threads
            .iter()
            .flat_map(|th| {
                th.steps.iter().map(move |s| {
                    (
                        th.id,
                        s.op,
                        th.files.get(s.file as usize).copied().unwrap_or(DIR_FILE),
                        s.offset,
                        s.len as u64,
                    )
                })
            })
            .collect()
    }

    /// Number of threads the replay starts.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Memory the run needs beyond the plan: worker stacks, each worker's buffer (its largest
    /// call) and latency samples (one or two per call), and the reported histograms (per
    /// reported thread, and per call kind).
    pub fn run_bytes(&self, timed: bool) -> u64 {
        let per_sample = if timed { 16 } else { 8 };
        let workers: u64 = self
            .threads
            .iter()
            .map(|t| {
                WORKER_STACK_BYTES as u64
                    + (t.max_len as u64).next_multiple_of(4096).max(4096)
                    + t.steps.len() as u64 * per_sample
                    + 16 * t.files.len() as u64
                    // Names of its unlink placeholders and new directories, its listing buffer.
                    + 32 * (t.unlinks + t.mkdirs)
                    + if t.readdirs { 32 << 10 } else { 0 }
            })
            .sum();
        workers
            + HIST_PAIR_BYTES
                * (self.threads.len().min(REPORTED_THREADS_MAX + 1) + CALLS.len()) as u64
    }

    /// Sizes of the planned reads and writes, in the one histogram (bytes).
    pub(super) fn size_hist(&self) -> LatencyHist {
        let mut h = LatencyHist::default();
        for (len, n) in &self.len_counts {
            h.record_n(*len as u64, *n);
        }
        h
    }
}

impl ThreadPlan {
    /// The step of a call on the replay's own directory (None for the calls on files): each
    /// mkdir and unlink gets its own number, so no two steps name the same entry.
    fn dir_step(&mut self, op: TraceOp, start_ns: u64) -> Option<Step> {
        let offset = match op {
            TraceOp::Unlink => {
                self.unlinks += 1;
                self.unlinks - 1
            }
            TraceOp::Mkdir => {
                self.mkdirs += 1;
                self.mkdirs - 1
            }
            TraceOp::Readdir => {
                self.readdirs = true;
                0
            }
            _ => return None,
        };
        Some(Step {
            op,
            file: DIR_FILE,
            offset,
            len: 0,
            start_ns,
        })
    }
}
