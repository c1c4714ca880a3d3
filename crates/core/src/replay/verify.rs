//! `fsbench replay --verify`: what a replay knows its scratch files hold, handed to the
//! runner's verify hooks (`runner/verify.rs`), which the thread's Issuer runs around its calls.
//!
//! The scratch files are filled with generation 0 of [`crate::verify::stream`] and every
//! replayed write carries generation k for the offset it lands at, in the k-th replay on
//! the files (`--repeat`), so that a write one replay lost cannot pass for the one before. Before the start the plan
//! marks the reads that are checked: a read whose whole range this thread wrote earlier in the
//! replay, of a file no other thread writes (another thread's writes are not ordered with this
//! thread's reads). Every other read (of bytes the replay did not write) is issued unchecked.
//! A write that moved fewer bytes than asked leaves its file unknown to the thread: its later
//! reads are skipped and counted.

use super::plan::ThreadPlan;
use crate::runner::verify::{Contents, Expected, FileGen, NoCheck};
use crate::trace::TraceOp;
use std::cell::Cell;
use std::collections::BTreeMap;

/// The identity of scratch file `target` in the stream's key (the file is the report's user).
pub(super) fn file_id(target: u32) -> u64 {
    (target as u64) << 40
}

/// The key of what the scratch file `target` is filled with.
pub(super) fn fill_key(seed: u64, target: u32) -> u64 {
    crate::verify::stream::key(seed, file_id(target), 0)
}

/// Byte ranges written, by start (disjoint, not touching).
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn add(&mut self, mut start: u64, mut end: u64) {
        // Merge with every range that overlaps or touches [start, end).
        if let Some((&s, &e)) = self.0.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let inside: Vec<(u64, u64)> = self.0.range(start..=end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in inside {
            self.0.remove(&s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }

    fn covers(&self, start: u64, end: u64) -> bool {
        self.0
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }
}

/// Mark, in each thread's plan, the reads `--verify` checks (see the module's doc). The
/// threads' `files` are scratch file indices.
pub(super) fn mark_checked_reads(threads: &mut [ThreadPlan]) {
    // The one thread writing each scratch file, or usize::MAX when several do.
    let mut writer: BTreeMap<u32, usize> = BTreeMap::new();
    for (t, th) in threads.iter().enumerate() {
        for s in th.steps.iter().filter(|s| s.op == TraceOp::Write) {
            let Some(&f) = th.files.get(s.file as usize) else {
                continue;
            };
            let w = writer.entry(f).or_insert(t);
            if *w != t {
                *w = usize::MAX;
            }
        }
    }
    for (t, th) in threads.iter_mut().enumerate() {
        let mut written: Vec<Ranges> = (0..th.files.len()).map(|_| Ranges::default()).collect();
        let checked = th
            .steps
            .iter()
            .map(|s| {
                let Some(r) = written.get_mut(s.file as usize) else {
                    return false;
                };
                let (start, end) = (s.offset, s.offset + s.len as u64);
                match s.op {
                    TraceOp::Write => {
                        r.add(start, end);
                        false
                    }
                    TraceOp::Read => {
                        let only_mine = writer.get(&th.files[s.file as usize]) == Some(&t);
                        only_mine && s.len > 0 && r.covers(start, end)
                    }
                    _ => false,
                }
            })
            .collect();
        th.checked = checked;
    }
}

/// What `--verify` will check, for the Result's notes: how many replayed reads (of those the
/// threads issue) are checked, or that none is.
pub(super) fn note(threads: &[ThreadPlan]) -> String {
    let checked: usize = threads
        .iter()
        .map(|t| t.checked.iter().filter(|&&c| c).count())
        .sum();
    let reads: usize = threads
        .iter()
        .map(|t| t.steps.iter().filter(|s| s.op == TraceOp::Read).count())
        .sum();
    if checked == 0 {
        format!(
            "--verify: none of the {reads} replayed reads is of a range its thread wrote earlier in the replay: nothing is checked"
        )
    } else {
        format!(
            "--verify: {checked} of the {reads} replayed reads are of ranges their thread wrote earlier in the replay and are checked; the others are not"
        )
    }
}

/// A replay thread's files as the verify hooks see them: a file is (the thread's index of it,
/// its scratch index); `short` marks the files a short write left unknown.
pub(super) struct Written<'a> {
    pub short: &'a [Cell<bool>],
    /// The generation this replay's writes carry (1 for the first replay on the files).
    pub generation: u64,
}

impl Contents for Written<'_> {
    type File = (u32, u32);
    type Write = u64;

    fn write_begins(
        &self,
        (_, target): (u32, u32),
        at: Option<u64>,
        len: u64,
    ) -> (u64, FileGen, u64) {
        let gen = FileGen {
            file: file_id(target),
            generation: self.generation,
        };
        (at.unwrap_or(0), gen, len)
    }

    fn write_ends(&self, (local, _): (u32, u32), len: u64, written: Option<u64>) {
        if written != Some(len) {
            if let Some(c) = self.short.get(local as usize) {
                c.set(true);
            }
        }
    }

    fn read_begins(
        &self,
        (local, target): (u32, u32),
        at: u64,
        len: u64,
    ) -> Result<Expected, NoCheck> {
        if self.short.get(local as usize).is_none_or(|c| c.get()) {
            return Err(NoCheck::Unknown);
        }
        Ok(Expected {
            of: FileGen {
                file: file_id(target),
                generation: self.generation,
            },
            // What the replay before wrote there (the fill, before the first).
            before: Some(self.generation - 1),
            end: at + len,
            seq: 0,
        })
    }

    fn read_unchanged(&self, _: (u32, u32), _: &Expected) -> bool {
        // Only this thread writes the files of its checked reads, and it is reading.
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::plan::Step;

    fn step(op: TraceOp, file: u32, offset: u64, len: u32) -> Step {
        Step {
            op,
            file,
            offset,
            len,
            start_ns: 0,
        }
    }

    fn thread(files: Vec<u32>, steps: Vec<Step>) -> ThreadPlan {
        ThreadPlan {
            id: 0,
            steps,
            files,
            max_len: 4096,
            data_ops: 0,
            user: 0,
            unlinks: 0,
            mkdirs: 0,
            readdirs: false,
            checked: Vec::new(),
        }
    }

    #[test]
    fn only_reads_of_what_the_thread_itself_wrote_are_checked() {
        use TraceOp::{Read, Write};
        let mut threads = vec![
            thread(
                vec![0, 1],
                vec![
                    step(Read, 0, 0, 4096), // not written yet
                    step(Write, 0, 0, 4096),
                    step(Write, 0, 4096, 100), // touches the first: [0, 4196)
                    step(Read, 0, 10, 4186),   // inside
                    step(Read, 0, 4000, 4096), // past what was written
                    step(Write, 1, 0, 4096),
                    step(Read, 1, 0, 4096), // file 1 is written by the other thread too
                ],
            ),
            thread(vec![1], vec![step(Write, 0, 8192, 4096)]),
        ];
        mark_checked_reads(&mut threads);
        assert_eq!(
            threads[0].checked,
            vec![false, false, false, true, false, false, false]
        );
        assert_eq!(threads[1].checked, vec![false]);
    }

    #[test]
    fn ranges_merge_and_cover() {
        let mut r = Ranges::default();
        r.add(100, 200);
        r.add(300, 400);
        assert!(!r.covers(150, 350));
        r.add(200, 300);
        assert!(r.covers(100, 400) && !r.covers(99, 120) && !r.covers(390, 401));
        assert_eq!(r.0.len(), 1);
    }
}
