//! The runtime picker: an entry in the wanted state (exists or absent) taken in turn from a
//! rotor or an index, marked busy in the shared arena while a flowop works on it, as
//! Filebench's `fileset_pick` does.

use super::super::shared::{Arena, Rotor, ENTRY_BUSY, ENTRY_EXISTS, ENTRY_OPEN_ONE};
use std::sync::atomic::Ordering::*;

/// What a flowop needs from the picker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Exists,
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picked {
    Got(usize),
    /// No entry is (or can become) in the wanted state: Filebench's "out of resources".
    NoRsc,
}

fn matches(state: u32, want: Want) -> bool {
    (state & ENTRY_EXISTS != 0) == (want == Want::Exists)
}

/// How many descriptors have the entry open (Filebench's `fse_open_cnt`).
pub fn open_count(state: u32) -> u32 {
    state / ENTRY_OPEN_ONE
}

/// Where a pick starts looking, as in Filebench's `fileset_pick`.
pub enum From<'a> {
    /// The fileset's shared rotor: openfile, deletefile and statfile share `Rotor::Exists`,
    /// createfile uses `Rotor::Absent`, listdir `Rotor::Dir`. The next pick starts after the
    /// entry picked, so files are taken in turn.
    Shared(Rotor),
    /// A rotor of the thread's own (`openfile` with `opennext`/`rotatefd`: Filebench's
    /// per-thread `fs_file_exrotor[tid]`).
    Private(&'a mut u32),
    /// `indexed=N`: the first entry at or after N (wrapping) in the wanted state.
    Index(usize),
}

/// Pick an entry in the wanted state, starting at `from` and taking the next one in index
/// order that is in that state and not busy. The entry is marked busy for the caller, who
/// clears the mark with [`unbusy`] as soon as the operation on it is done (Filebench keeps
/// entries busy only while picking, opening, deleting or closing them; an open file is not
/// busy). When every entry in the wanted state is busy, wait briefly and look again (Filebench
/// gives up with "out of resources"; the wait is microseconds here).
pub fn pick(arena: &Arena, set: usize, want: Want, mut from: From) -> Picked {
    let states = arena.entries(set);
    let n = states.len();
    if n == 0 {
        return Picked::NoRsc;
    }
    for round in 0..2000 {
        let have = arena.set_exists_count(set).load(Acquire) as usize;
        if (want == Want::Exists && have == 0) || (want == Want::Absent && have >= n) {
            return Picked::NoRsc;
        }
        let start = match &from {
            From::Shared(r) => arena.rotor(set, *r).load(Relaxed) as usize,
            From::Private(r) => **r as usize,
            From::Index(i) => *i,
        } % n;
        let mut any_match = false;
        for k in 0..n {
            let i = (start + k) % n;
            let s = states[i].load(Acquire);
            if !matches(s, want) {
                continue;
            }
            any_match = true;
            if s & ENTRY_BUSY != 0
                || states[i]
                    .compare_exchange(s, s | ENTRY_BUSY, AcqRel, Relaxed)
                    .is_err()
            {
                continue;
            }
            let next = ((i + 1) % n) as u32;
            match &mut from {
                From::Shared(r) => arena.rotor(set, *r).store(next, Relaxed),
                From::Private(r) => **r = next,
                From::Index(_) => {}
            }
            return Picked::Got(i);
        }
        if !any_match || arena.stopping() {
            return Picked::NoRsc;
        }
        std::thread::sleep(std::time::Duration::from_micros(if round < 10 {
            50
        } else {
            500
        }));
    }
    Picked::NoRsc
}

/// Clear the busy mark (Filebench's `fileset_unbusy`): optionally record whether the entry
/// now exists, and add `open_delta` to its open count.
pub fn unbusy(arena: &Arena, set: usize, i: usize, exists: Option<bool>, open_delta: i32) {
    let st = &arena.entries(set)[i];
    let mut old = st.load(Acquire);
    loop {
        let was = old & ENTRY_EXISTS != 0;
        let now = exists.unwrap_or(was);
        let opens = (open_count(old) as i64 + open_delta as i64).max(0) as u32;
        let new = (opens * ENTRY_OPEN_ONE) | if now { ENTRY_EXISTS } else { 0 };
        match st.compare_exchange(old, new, AcqRel, Acquire) {
            Ok(_) => {
                if was != now {
                    let c = arena.set_exists_count(set);
                    if now {
                        c.fetch_add(1, AcqRel);
                    } else {
                        c.fetch_sub(1, AcqRel);
                    }
                }
                return;
            }
            Err(x) => old = x,
        }
    }
}

/// Mark an entry busy that the caller already knows (a file it has open), waiting while
/// another thread holds it busy (Filebench's closefile and `deletefile fd=N`).
pub fn busy_wait(arena: &Arena, set: usize, i: usize) {
    let st = &arena.entries(set)[i];
    loop {
        let s = st.load(Acquire);
        if s & ENTRY_BUSY == 0
            && st
                .compare_exchange(s, s | ENTRY_BUSY, AcqRel, Relaxed)
                .is_ok()
        {
            return;
        }
        std::thread::yield_now();
    }
}

/// Clear the busy mark and record whether the entry now exists.
pub fn release(arena: &Arena, set: usize, i: usize, exists: bool) {
    unbusy(arena, set, i, Some(exists), 0)
}
